package agentonce_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
)

// The abusive clients of these tests speak to a real agent (agentonce.Open
// on a bbolt journal) over its real socket, as a stray script of the
// agent's own user would.

// servingAgent opens an agent that serves its socket, with one Keyed tool
// whose effects *effects counts.
func servingAgent(t testing.TB, effects *atomic.Int64) *harness.Harness {
	t.Helper()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), &agentonce.OpenOptions{Inspect: agentonce.InspectRequire})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	err = h.Register(harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			effects.Add(1)
			return json.RawMessage(`{"ok":true}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// callsWork makes n fresh calls and checks that each ran once.
func callsWork(t *testing.T, h *harness.Harness, effects *atomic.Int64, prefix string, n int) {
	t.Helper()
	before := effects.Load()
	for i := range n {
		res := h.Call(context.Background(), harness.ToolCall{Tenant: "t", Session: prefix, Turn: fmt.Sprint(i), Tool: "charge", Input: json.RawMessage(`{"amount":1}`)})
		if !res.OK() {
			t.Fatalf("call %d: %v (%v)", i, res.Status, res.Err)
		}
	}
	if got := effects.Load() - before; got != int64(n) {
		t.Errorf("%d calls made %d effects; want %d", n, got, n)
	}
}

// rawConn connects to the socket; with greet, it exchanges the hellos.
func rawConn(t *testing.T, sock string, greet bool) (*net.UnixConn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	if greet {
		fmt.Fprintf(c, `{"protocol":"agentonce-inspect","version":%d}`+"\n", inspect.Version)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := r.ReadString('\n')
		if err != nil || !strings.Contains(line, `"namespace"`) {
			t.Fatalf("hello = %q, %v; want the agent's hello", line, err)
		}
		c.SetReadDeadline(time.Time{})
	}
	return c, r
}

// flood writes prefix and then fill bytes until total bytes are written or
// a write fails (the agent closed the connection); it returns how many it
// wrote, and the first line the agent answered.
func flood(c *net.UnixConn, r *bufio.Reader, prefix, suffix string, total int) (written int, answer string) {
	got := make(chan string, 1)
	go func() {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		line, _ := r.ReadString('\n')
		got <- line
	}()
	n, err := c.Write([]byte(prefix))
	written += n
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for err == nil && written < total {
		n, err = c.Write(chunk)
		written += n
	}
	if err == nil && suffix != "" {
		n, _ = c.Write([]byte(suffix))
		written += n
	}
	return written, <-got
}

// TestInspectEndlessLine: a client that sends one line without end, before
// or after the hello, is cut once it passed the bound; the agent held at
// most the bound (and the socket's buffers) of it, and keeps serving. On
// 308119c the agent read all 64 MiB into one growing value, and would
// have gone on.
func TestInspectEndlessLine(t *testing.T) {
	var effects atomic.Int64
	h := servingAgent(t, &effects)
	for _, tc := range []struct {
		name  string
		greet bool
		bound int
	}{
		{"before the hello", false, 4 << 10},
		{"after the hello", true, inspect.DefaultMaxFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := rawConn(t, agentonce.InspectSocket(h), tc.greet)
			prefix := `{"protocol":"agentonce-inspect","pad":"`
			if tc.greet {
				prefix = `{"op":"get","key":"`
			}
			written, answer := flood(c, r, prefix, "", 64<<20)
			// What the agent did not read waits in the two socket buffers
			// (a few hundred KiB on Linux).
			if limit := tc.bound + 4<<20; written > limit {
				t.Errorf("the agent took %d bytes of one endless line; want it cut after about %d", written, tc.bound)
			}
			if !strings.Contains(answer, `"invalid"`) || !strings.Contains(answer, fmt.Sprintf("longer than %d bytes", tc.bound)) {
				t.Errorf("the agent answered %q; want an invalid error naming the bound %d", answer, tc.bound)
			}
			callsWork(t, h, &effects, tc.name, 5)
		})
	}
}

// TestInspect100MBLine: a well-formed request padded to 100 MB is refused
// with an error naming the bound, without the agent reading it whole; an
// agentctl client is served after it. On 308119c the agent decoded all of
// it and answered the request.
func TestInspect100MBLine(t *testing.T) {
	var effects atomic.Int64
	h := servingAgent(t, &effects)
	for i := range 3 {
		c, r := rawConn(t, agentonce.InspectSocket(h), true)
		written, answer := flood(c, r, `{"op":"stats","pad":"`, "\"}\n", 100<<20)
		if !strings.Contains(answer, fmt.Sprintf("longer than %d bytes", inspect.DefaultMaxFrame)) {
			t.Fatalf("line %d: the agent answered %.200q after %d bytes; want an invalid error naming the bound", i, answer, written)
		}
		if written > inspect.DefaultMaxFrame+4<<20 {
			t.Errorf("line %d: the agent took %d bytes; want it cut after about %d", i, written, inspect.DefaultMaxFrame)
		}
		c.Close()
	}
	cl, err := inspect.Dial(context.Background(), agentonce.InspectSocket(h))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	callsWork(t, h, &effects, "after", 5)
	if st, err := cl.Stats(context.Background()); err != nil || st.Records != 5 {
		t.Errorf("Stats over the socket = %+v, %v; want 5 records", st, err)
	}
}

// TestInspectManyConnections: a client that opens many more connections
// than the cap and says nothing on them holds at most MaxConns of the
// agent's descriptors; the others are told busy and closed, and the agent's
// calls go on. On 308119c the agent held every one of them open.
func TestInspectManyConnections(t *testing.T) {
	var effects atomic.Int64
	h := servingAgent(t, &effects)
	const n = inspect.DefaultMaxConns + 300
	before := socketFDs(t)
	conns := make([]*net.UnixConn, n)
	for i := range conns {
		conns[i], _ = rawConn(t, agentonce.InspectSocket(h), false)
	}
	callsWork(t, h, &effects, "during", 20)
	// This process holds both ends: the agent's are the sockets beyond
	// the n the client opened. The connections the agent has not taken
	// yet wait in the kernel's backlog and hold none of its descriptors;
	// one more may be in its hands, being told busy.
	agentHeld := func() {
		t.Helper()
		if got := socketFDs(t) - before - n; got > inspect.DefaultMaxConns+1 {
			t.Errorf("the agent holds %d connections; want at most %d and the one it refuses", got, inspect.DefaultMaxConns)
		}
	}
	agentHeld()
	// Each connection is told busy and closed, closed after the handshake
	// timeout, or still waiting after 3 s.
	var busy atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			if strings.Contains(line, `"busy"`) {
				busy.Add(1)
			}
		})
	}
	wg.Wait()
	agentHeld()
	if busy.Load() == 0 {
		t.Errorf("no connection beyond the cap of %d was told busy", inspect.DefaultMaxConns)
	}
	for _, c := range conns {
		c.Close()
	}
	// The agent sees each close at once; agentctl gets in again.
	var cl *inspect.Client
	var err error
	for range 200 {
		if cl, err = inspect.Dial(context.Background(), agentonce.InspectSocket(h)); !errors.Is(err, inspect.ErrBusy) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Dial after the flood: %v", err)
	}
	defer cl.Close()
	if _, err := cl.Stats(context.Background()); err != nil {
		t.Errorf("Stats after the flood: %v", err)
	}
}

// socketFDs counts this process's open sockets.
func socketFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
