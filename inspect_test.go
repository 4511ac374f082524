package agentonce_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/memory"
)

// unknownTool is an Unkeyed tool whose every attempt may have happened
// (a plain error): its intent ends unknown. runs counts its side effects.
func unknownTool(runs *atomic.Int32) harness.Tool {
	return harness.Tool{Name: "send_email", Timeout: time.Second, Settle: -1,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return nil, errors.New("connection reset after the request was sent")
		}}
}

var emailCall = harness.ToolCall{Tenant: "t", Session: "s1", Turn: "1", Tool: "send_email", Input: json.RawMessage(`{"to":"a@b"}`)}

// TestInspectResolveReachesTheAgent: an operator's resolution sent over
// the socket answers the agent's next call of the intent, and the tool
// does not run again; reads over the socket match the store.
func TestInspectResolveReachesTheAgent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	h, err := agentonce.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var runs atomic.Int32
	if err := h.Register(unknownTool(&runs)); err != nil {
		t.Fatal(err)
	}
	if got, want := agentonce.InspectSocket(h), path+".sock"; got != want {
		t.Fatalf("InspectSocket() = %q; want %q", got, want)
	}
	fi, err := os.Lstat(path + ".sock")
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi, err)
	}
	first := h.Call(ctx, emailCall)
	if first.Status != harness.Unknown {
		t.Fatalf("first call = %v (%v); want unknown", first.Status, first.Err)
	}

	c, err := inspect.Dial(ctx, agentonce.InspectSocket(h))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Get(ctx, first.Key)
	want, _ := h.Store().Get(ctx, first.Key)
	if err != nil || got.State != journal.StateUnknown || len(got.Attempts) != len(want.Attempts) || c.Namespace() != h.Store().Namespace() {
		t.Fatalf("Get over the socket = %v with %d attempts, %v; want unknown with %d", got.State, len(got.Attempts), err, len(want.Attempts))
	}
	if _, err := c.Resolve(ctx, first.Key, journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"id":"m-1"}`), By: "op"}); err != nil {
		t.Fatal(err)
	}
	next := h.Call(ctx, emailCall)
	if next.Status != harness.Succeeded || next.Source != harness.Replayed || string(next.Output) != `{"id":"m-1"}` {
		t.Errorf("call after resolve = %v/%v %s (%v); want succeeded/replayed {\"id\":\"m-1\"}", next.Status, next.Source, next.Output, next.Err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("tool ran %d times; want 1", n)
	}
}

// TestInspectEvents: a follower sees every step of a call, in order, and
// a bye when the Harness closes; the socket is gone after Close.
func TestInspectEvents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	var userEvents atomic.Int32
	// The journal is new: Open's EventNewJournal comes before anyone can
	// subscribe, so the caller's count leaves it out.
	h, err := agentonce.Open(ctx, path, &agentonce.OpenOptions{Options: harness.Options{Observer: harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		if e.Kind != harness.EventNewJournal {
			userEvents.Add(1)
		}
	})}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	h.Register(unknownTool(&runs))
	c, err := inspect.Dial(ctx, agentonce.InspectSocket(h))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ready := make(chan struct{})
	var kinds []string
	var last, resolved inspect.Event
	done := make(chan error, 1)
	go func() {
		done <- c.Events(ctx, func() { close(ready) }, func(e inspect.Event) error {
			kinds = append(kinds, e.Kind)
			if e.Kind == "resolved" {
				resolved = e
			} else {
				last = e
			}
			return nil
		}, nil)
	}()
	<-ready
	res := h.Call(ctx, emailCall)
	// The operator's resolve through the socket follows the call's events.
	if _, err := c.Resolve(ctx, res.Key, journal.Resolution{State: journal.StateFailed, Reason: "bounced", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Events after Close = %v; want nil (the agent said bye)", err)
	}
	want := "before-write-ahead after-write-ahead after-effect after-outcome needs-person result resolved"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events = %q; want %q", got, want)
	}
	if resolved.Key != res.Key.String() || resolved.Status != "failed" || resolved.Tool != "send_email" {
		t.Errorf("resolved event = %+v; want failed, for key %s", resolved, res.Key)
	}
	if last.Status != "unknown" || last.Key != res.Key.String() || last.Session != "s1" || last.Tool != "send_email" || last.Class != "maybe-executed" {
		t.Errorf("result event = %+v; want unknown, maybe-executed, for key %s", last, res.Key)
	}
	if n := userEvents.Load(); int(n) != len(kinds) {
		t.Errorf("the caller's Observer saw %d events; want %d, the same", n, len(kinds))
	}
	if _, err := os.Lstat(path + ".sock"); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v; want it removed", err)
	}
}

// TestInspectModes: Off serves nothing; a stale socket is replaced; a
// file in the way is logged and skipped by Auto and fails Open under
// Require, which then leaves the journal closed.
func TestInspectModes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	sock := path + ".sock"

	h, err := agentonce.Open(ctx, path, &agentonce.OpenOptions{Inspect: agentonce.InspectOff})
	if err != nil {
		t.Fatal(err)
	}
	if s := agentonce.InspectSocket(h); s != "" {
		t.Errorf("InspectOff: InspectSocket() = %q; want none", s)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("InspectOff made a socket: %v", err)
	}
	h.Close()

	if s := agentonce.InspectSocket(harness.New(memory.New(nil), nil)); s != "" {
		t.Errorf("New: InspectSocket() = %q; want none", s)
	}

	// What an agent killed by SIGKILL leaves behind.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	h, err = agentonce.Open(ctx, path, &agentonce.OpenOptions{Inspect: agentonce.InspectRequire})
	if err != nil {
		t.Fatalf("Open over a stale socket: %v", err)
	}
	if c, err := inspect.Dial(ctx, sock); err != nil {
		t.Errorf("Dial after the stale socket was replaced: %v", err)
	} else {
		c.Close()
	}
	h.Close()

	os.WriteFile(sock, []byte("not a socket"), 0o600)
	var log bytes.Buffer
	h, err = agentonce.Open(ctx, path, &agentonce.OpenOptions{Options: harness.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}})
	if err != nil {
		t.Fatalf("InspectAuto with a file in the way: Open = %v; want the agent to start", err)
	}
	if s := agentonce.InspectSocket(h); s != "" || !strings.Contains(log.String(), "not serving agentctl") {
		t.Errorf("InspectAuto with a file in the way: socket %q, log %q; want none and a warning", s, log.String())
	}
	h.Close()
	_, err = agentonce.Open(ctx, path, &agentonce.OpenOptions{Inspect: agentonce.InspectRequire})
	if !errors.Is(err, inspect.ErrSocketInUse) || !strings.Contains(err.Error(), sock) {
		t.Errorf("InspectRequire with a file in the way: Open error = %v; want ErrSocketInUse naming %s", err, sock)
	}
	// The failed Open released the journal.
	h, err = agentonce.Open(ctx, path, &agentonce.OpenOptions{Inspect: agentonce.InspectOff, Journal: &journal.Options{StoreOptions: &bolt.Options{LockTimeout: 100 * time.Millisecond}}})
	if err != nil {
		t.Fatalf("Open after a failed Open: %v", err)
	}
	h.Close()
}

// A Harness on a bbolt file serves agentctl beside the journal, unless
// told not to.
func ExampleInspectSocket() {
	dir, err := os.MkdirTemp("", "agentonce-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.journal")

	h, err := agentonce.Open(context.Background(), path, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(filepath.Base(agentonce.InspectSocket(h)))
	h.Close()

	h, err = agentonce.Open(context.Background(), path, &agentonce.OpenOptions{Inspect: agentonce.InspectOff})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", agentonce.InspectSocket(h))
	h.Close()
	// Output:
	// agent.journal.sock
	// ""
}
