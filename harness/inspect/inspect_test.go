package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// served is a bbolt journal with records, served at its socket.
type served struct {
	store *bolt.Store
	srv   *Server
	sock  string
	keys  []uuid.UUID // by creation order
}

// serve opens a bbolt journal in a temporary directory, records n intents
// (session "s", turns 0..n-1: the even ones succeeded, the odd ones
// unknown) and serves it.
func serve(t *testing.T, n int) *served {
	t.Helper()
	return serveWith(t, n, &ServerOptions{})
}

// serveWith is serve with the given bounds.
func serveWith(t *testing.T, n int, opts *ServerOptions) *served {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	st, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fx := &served{store: st, sock: SocketPath(path)}
	ctx := context.Background()
	d := keyderive.Deriver{Namespace: st.Namespace()}
	for i := range n {
		in := keyderive.Intent{Tenant: "t", Session: "s", Turn: fmt.Sprint(i), Tool: "charge"}
		der, err := d.Derive(in, []byte(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.Begin(ctx, journal.BeginRequest{Key: der.Key, Intent: in, Fingerprint: der.Fingerprint,
			Input: der.Canonical, Owner: "o", AttemptID: fmt.Sprint("a", i), Durable: true})
		if err != nil {
			t.Fatal(err)
		}
		c := journal.Completion{Key: der.Key, Token: b.Token, State: journal.StateSucceeded, Output: []byte(`{"ok":true}`)}
		if i%2 == 1 {
			c = journal.Completion{Key: der.Key, Token: b.Token, State: journal.StateUnknown, ErrorClass: "maybe-executed", ErrorMessage: "timeout"}
		}
		if _, err := st.Complete(ctx, c); err != nil {
			t.Fatal(err)
		}
		fx.keys = append(fx.keys, der.Key)
	}
	opts.Journal, opts.Owner = path, "agent-1"
	fx.srv, err = Listen(fx.sock, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.srv.Close() })
	return fx
}

func dial(t *testing.T, sock string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReadsMatchTheStore: every read through the socket equals the same
// read of the store itself, field by field.
func TestReadsMatchTheStore(t *testing.T) {
	fx := serve(t, 5)
	c := dial(t, fx.sock)
	ctx := context.Background()
	if c.Namespace() != fx.store.Namespace() {
		t.Errorf("Namespace() = %v; want %v", c.Namespace(), fx.store.Namespace())
	}
	if info := c.Info(); info.PID != os.Getpid() || info.Owner != "agent-1" {
		t.Errorf("Info() = %+v; want this pid and owner agent-1", info)
	}
	for _, k := range fx.keys {
		got, err := c.Get(ctx, k)
		want, _ := fx.store.Get(ctx, k)
		if err != nil || !sameRecord(got, want) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", k, got, err, want)
		}
	}
	if _, err := c.Get(ctx, uuid.New()); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get(absent) error = %v; want ErrNotFound", err)
	}
	for _, f := range []journal.Filter{{}, {Session: "s", Turn: "3"}, {State: journal.StateUnknown}, {Limit: 2}} {
		var got, want []journal.Record
		for r, err := range c.List(ctx, f) {
			if err != nil {
				t.Fatalf("List(%+v): %v", f, err)
			}
			got = append(got, r)
		}
		for r, _ := range fx.store.List(ctx, f) {
			want = append(want, r)
		}
		if len(got) != len(want) {
			t.Fatalf("List(%+v) = %d records; want %d", f, len(got), len(want))
		}
		for i := range got {
			if !sameRecord(got[i], want[i]) {
				t.Errorf("List(%+v)[%d] = %+v; want %+v", f, i, got[i], want[i])
			}
		}
	}
	gs, err := c.Stats(ctx)
	ws, _ := fx.store.Stats(ctx)
	if err != nil || !gs.Oldest.Equal(ws.Oldest) || !gs.Newest.Equal(ws.Newest) {
		t.Errorf("Stats() = %+v, %v; want %+v", gs, err, ws)
	}
	gs.Oldest, gs.Newest, ws.Oldest, ws.Newest = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(gs, ws) {
		t.Errorf("Stats() = %+v; want %+v", gs, ws)
	}
	if g, err := c.GC(ctx, journal.GCOptions{DryRun: true}); err != nil || g.Removed != 0 {
		t.Errorf("GC(dry run) = %+v, %v; want nothing to remove", g, err)
	}
}

// sameRecord compares records with times by Equal (the wire keeps the
// instant, not the location).
func sameRecord(a, b journal.Record) bool {
	ja, _ := json.Marshal(FromRecord(&a))
	jb, _ := json.Marshal(FromRecord(&b))
	return string(ja) == string(jb)
}

// TestRecordRoundTrip: a record with every field set survives the wire.
func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	r := journal.Record{Version: 1, Key: uuid.New(),
		Intent:      keyderive.Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "x", Discriminator: "d"},
		Fingerprint: keyderive.Fingerprint{1, 2, 3}, Effect: journal.Keyed, Input: []byte(`{"a":1}`),
		State: journal.StateSucceeded, Output: []byte{0xff, 0}, ErrorClass: "c", ErrorMessage: "m",
		Attempts:   []journal.Attempt{{ID: "a1", Start: at, End: at.Add(time.Second), Class: "maybe-executed", Error: "e", QuietAt: at}},
		Lease:      journal.Lease{Owner: "o", Token: 7, Expires: at},
		Resolution: &journal.Resolution{State: journal.StateSucceeded, Output: []byte(`1`), Reason: "r", By: "b", At: at},
		Created:    at, Updated: at, Expires: at}
	b, err := json.Marshal(FromRecord(&r))
	if err != nil {
		t.Fatal(err)
	}
	var w Record
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	got, err := w.ToRecord()
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("ToRecord(FromRecord(r)) = %+v, %v; want %+v", got, err, r)
	}
	// Input nil (fingerprint only) and empty stay apart.
	r.Input = nil
	b, _ = json.Marshal(FromRecord(&r))
	w = Record{}
	json.Unmarshal(b, &w)
	if got, _ := w.ToRecord(); got.Input != nil {
		t.Errorf("nil Input came back as %q", got.Input)
	}
}

// TestResolveThroughTheSocket: a resolution sent by a client is in the
// store, and a second one is refused as already settled.
func TestResolveThroughTheSocket(t *testing.T) {
	fx := serve(t, 2)
	c := dial(t, fx.sock)
	ctx := context.Background()
	unknown := fx.keys[1]
	r, err := c.Resolve(ctx, unknown, journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"id":7}`), By: "op", Reason: "checked"})
	if err != nil || r.State != journal.StateSucceeded {
		t.Fatalf("Resolve = %v, %v; want succeeded", r.State, err)
	}
	stored, _ := fx.store.Get(ctx, unknown)
	if stored.State != journal.StateSucceeded || string(stored.Output) != `{"id":7}` || stored.Resolution == nil || stored.Resolution.By != "op" {
		t.Errorf("store after Resolve = %v %q %+v; want succeeded {\"id\":7} by op", stored.State, stored.Output, stored.Resolution)
	}
	if _, err := c.Resolve(ctx, fx.keys[0], journal.Resolution{State: journal.StateFailed, Reason: "x"}); !errors.Is(err, journal.ErrNotResolvable) {
		t.Errorf("Resolve(settled) error = %v; want ErrNotResolvable", err)
	}
}

// TestApproveThroughTheSocket: an approval sent by a client carries the
// fingerprint of the input it approves: the right one is recorded, another
// is refused and records nothing.
func TestApproveThroughTheSocket(t *testing.T) {
	fx := serve(t, 0)
	ctx := context.Background()
	d := keyderive.Deriver{Namespace: fx.store.Namespace()}
	in := keyderive.Intent{Session: "s", Turn: "1", Tool: "refund"}
	der, err := d.Derive(in, []byte(`{"amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.store.Begin(ctx, journal.BeginRequest{Key: der.Key, Intent: in, Fingerprint: der.Fingerprint,
		Input: der.Canonical, Owner: "o", Durable: true, Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, fx.sock)
	other := der.Fingerprint
	other[0] ^= 1
	if _, err := c.Resolve(ctx, der.Key, journal.Resolution{State: journal.StatePending, By: "eve", Fingerprint: other}); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("approval of another input = %v; want ErrInvalid", err)
	}
	if _, err := c.Resolve(ctx, der.Key, journal.Resolution{State: journal.StatePending, By: "ann", Reason: "ok", Fingerprint: der.Fingerprint}); err != nil {
		t.Fatalf("approval = %v", err)
	}
	stored, _ := fx.store.Get(ctx, der.Key)
	if g := stored.Approval.Given; len(g) != 1 || g[0].By != "ann" || g[0].Fingerprint != der.Fingerprint {
		t.Errorf("approvals after one good and one forged = %+v; want ann's only", g)
	}
}

// TestWritesNotServed: the writes the agent keeps for itself are refused
// as "in use", and change nothing.
func TestWritesNotServed(t *testing.T) {
	fx := serve(t, 1)
	c := dial(t, fx.sock)
	ctx := context.Background()
	before, _ := fx.store.Stats(ctx)
	_, err1 := c.GC(ctx, journal.GCOptions{})
	err2 := c.Import(ctx, journal.Record{Key: uuid.New()})
	_, err3 := c.Begin(ctx, journal.BeginRequest{Key: uuid.New()})
	for i, err := range []error{err1, err2, err3} {
		if !errors.Is(err, journal.ErrInUse) || !errors.Is(err, ErrNotServed) {
			t.Errorf("write %d error = %v; want ErrInUse and ErrNotServed", i, err)
		}
	}
	if after, _ := fx.store.Stats(ctx); after.Records != before.Records {
		t.Errorf("records after refused writes = %d; want %d", after.Records, before.Records)
	}
}

// rawHello connects without the Client and says hello with version v.
func rawHello(t *testing.T, sock string, v int) map[string]any {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, `{"protocol":"agentonce-inspect","version":%d}`+"\n", v)
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer to hello version %d: %v", v, err)
	}
	var m map[string]any
	json.Unmarshal(line, &m)
	return m
}

// TestVersionMismatch: a client of another version is told, with the
// code "version", and the client maps a foreign hello to ErrVersion.
func TestVersionMismatch(t *testing.T) {
	fx := serve(t, 0)
	m := rawHello(t, fx.sock, Version+1)
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != codeVersion || !strings.Contains(fmt.Sprint(e["message"]), "version") {
		t.Errorf("hello version %d answered %v; want an error with code %q", Version+1, m, codeVersion)
	}

	// A server of another version, as a newer agent would answer.
	sock := filepath.Join(t.TempDir(), "v.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadBytes('\n')
		fmt.Fprintf(c, `{"protocol":"agentonce-inspect","version":%d,"namespace":"%s"}`+"\n", Version+1, uuid.New())
	}()
	if _, err := Dial(context.Background(), sock); !errors.Is(err, ErrVersion) {
		t.Errorf("Dial(server of version %d) error = %v; want ErrVersion", Version+1, err)
	}
}

// TestStaleSocket: a socket left by a server that is gone is removed by
// the next Listen; a live one, and a file that is not a socket, are not.
func TestStaleSocket(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sock := filepath.Join(dir, "j.db.sock")

	// A listener closed without unlinking leaves what a SIGKILL leaves.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(context.Background(), sock); !errors.Is(err, ErrNoAgent) {
		t.Errorf("Dial(stale) error = %v; want ErrNoAgent", err)
	}
	srv, err := Listen(sock, st, nil)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket = %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	if _, err := Listen(sock, st, nil); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("Listen over a live socket error = %v; want ErrSocketInUse", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v; want it removed", err)
	}

	os.WriteFile(sock, []byte("mine"), 0o600)
	if _, err := Listen(sock, st, nil); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("Listen over a regular file error = %v; want ErrSocketInUse", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "mine" {
		t.Errorf("the regular file was changed to %q", b)
	}
}

// TestLongSocketPath: a journal deeper than sun_path allows is still
// served and reached.
func TestLongSocketPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 120 {
		dir = filepath.Join(dir, strings.Repeat("d", 20))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "journal.db")
	st, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := Listen(SocketPath(path), st, nil)
	if err != nil {
		t.Skipf("Listen(%d-byte path): %v (no /proc here?)", len(SocketPath(path)), err)
	}
	defer srv.Close()
	c := dial(t, SocketPath(path))
	if c.Namespace() != st.Namespace() {
		t.Errorf("Namespace() over a long path = %v; want %v", c.Namespace(), st.Namespace())
	}
}

// TestEvents: published events reach a subscriber in order; Close sends
// the last ones and a bye, and Events returns nil.
func TestEvents(t *testing.T) {
	fx := serve(t, 0)
	c := dial(t, fx.sock)
	if fx.srv.Subscribed() {
		t.Fatal("Subscribed() before anyone subscribed")
	}
	ready := make(chan struct{})
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- c.Events(context.Background(), func() { close(ready) }, func(e Event) error {
			got = append(got, e.Kind+"/"+e.Turn)
			return nil
		}, nil)
	}()
	<-ready
	for i := range 3 {
		fx.srv.Publish(Event{Kind: "result", Turn: fmt.Sprint(i)})
	}
	fx.srv.Close()
	if err := <-done; err != nil {
		t.Errorf("Events after Close = %v; want nil (bye)", err)
	}
	if want := []string{"result/0", "result/1", "result/2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v; want %v", got, want)
	}
}

// TestEventsDropped: a subscriber that does not read loses events, and
// is told how many, instead of slowing Publish.
func TestEventsDropped(t *testing.T) {
	fx := serve(t, 0)
	c := dial(t, fx.sock)
	ready := make(chan struct{})
	release := make(chan struct{})
	var n, dropped int
	done := make(chan error, 1)
	go func() {
		done <- c.Events(context.Background(), func() { close(ready) }, func(Event) error {
			<-release // hold the reader: the buffers fill up
			n++
			return nil
		}, func(d int) { dropped += d })
	}()
	<-ready
	const total = 20 * subscriberBuffer
	for i := range total {
		fx.srv.Publish(Event{Kind: "result", Attempts: i})
	}
	close(release)
	fx.srv.Close()
	<-done
	if dropped == 0 || n+dropped != total {
		t.Errorf("received %d, dropped %d of %d; want some dropped and the sum %d", n, dropped, total, total)
	}
}

// TestAgentGoneMidList: a List cut off by the server's end is an
// ErrAgentGone, never a short answer taken for the whole.
func TestAgentGoneMidList(t *testing.T) {
	fx := serve(t, 300)
	c := dial(t, fx.sock)
	var err error
	n := 0
	for _, e := range c.List(context.Background(), journal.Filter{}) {
		if e != nil {
			err = e
			break
		}
		if n++; n == 1 {
			fx.srv.Close() // cuts the connection mid-stream
		}
	}
	if !errors.Is(err, ErrAgentGone) {
		t.Errorf("List cut off after %d records: error = %v; want ErrAgentGone", n, err)
	}
	if _, err := c.Get(context.Background(), fx.keys[0]); !errors.Is(err, ErrAgentGone) && !errors.Is(err, ErrNoAgent) {
		t.Errorf("Get after the agent left: %v; want ErrAgentGone or ErrNoAgent", err)
	}
}

// TestCloseLeavesAnotherSocket: a server whose socket was replaced (its
// journal removed, a new agent at the path) does not remove the new one
// when it closes.
func TestCloseLeavesAnotherSocket(t *testing.T) {
	fx := serve(t, 0)
	os.Remove(fx.sock)
	st2, err := bolt.Open(filepath.Join(t.TempDir(), "k.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	srv2, err := Listen(fx.sock, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	fx.srv.Close()
	c, err := Dial(context.Background(), fx.sock)
	if err != nil {
		t.Fatalf("the second server's socket after the first closed: %v", err)
	}
	defer c.Close()
	if c.Namespace() != st2.Namespace() {
		t.Errorf("answered by namespace %v; want the second server's %v", c.Namespace(), st2.Namespace())
	}
}

// silentUntilClosed reads from c until the server closes it, and fails the
// test when it has not within a minute.
func silentUntilClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var b [512]byte
	for {
		_, err := c.Read(b[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: the server kept the connection open", what)
		}
		if err != nil {
			return
		}
	}
}

// TestTimeouts: a connection that never greets is closed after the
// handshake timeout, and one quiet after its hello after the idle timeout;
// a Client quiet for longer dials again and is served.
func TestTimeouts(t *testing.T) {
	fx := serveWith(t, 1, &ServerOptions{HandshakeTimeout: 50 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	c, err := net.Dial("unix", fx.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	silentUntilClosed(t, c, "no hello")

	hi := rawHello(t, fx.sock, Version)
	if hi["idle_ms"] != float64(100) || hi["max_frame"] != float64(DefaultMaxFrame) {
		t.Errorf("hello = %v; want idle_ms 100 and max_frame %d", hi, DefaultMaxFrame)
	}
	g, err := net.Dial("unix", fx.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fmt.Fprintf(g, `{"protocol":%q,"version":%d}`+"\n", protocolName, Version)
	silentUntilClosed(t, g, "a hello, then nothing")

	cl := dial(t, fx.sock)
	for range 3 {
		if _, err := cl.Get(context.Background(), fx.keys[0]); err != nil {
			t.Fatalf("Get: %v", err)
		}
		time.Sleep(150 * time.Millisecond) // past the idle timeout
	}
}

// TestRequestTooLong: a request over the agent's bound is refused by the
// Client before it is sent, naming the bound, and the connection serves on.
func TestRequestTooLong(t *testing.T) {
	fx := serveWith(t, 2, &ServerOptions{MaxFrame: 1000})
	cl := dial(t, fx.sock)
	ctx := context.Background()
	big := journal.Resolution{State: journal.StateSucceeded, Output: []byte(`"` + strings.Repeat("x", 2000) + `"`), By: "op"}
	if _, err := cl.Resolve(ctx, fx.keys[1], big); !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("Resolve with a 2 KB output = %v; want ErrInvalid naming the bound 1000", err)
	}
	if _, err := cl.Get(ctx, fx.keys[1]); err != nil {
		t.Errorf("Get after the refusal: %v", err)
	}
}

// greeted connects and exchanges the hellos, and leaves the connection
// idle.
func greeted(t *testing.T, sock string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, `{"protocol":%q,"version":%d}`+"\n", protocolName, Version)
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"namespace"`) {
		t.Fatalf("hello = %q, %v; want the agent's hello", line, err)
	}
	return c, r
}

// TestIdleMakesRoom: MaxConns connections that greeted and sit idle do not
// keep a newcomer out: the one idle longest is closed, the newcomer served,
// the others serve on. The newcomer used to be told busy until one of
// them left.
func TestIdleMakesRoom(t *testing.T) {
	fx := serveWith(t, 1, &ServerOptions{MaxConns: 3})
	var idle []net.Conn
	var readers []*bufio.Reader
	for range 3 {
		c, r := greeted(t, fx.sock)
		idle, readers = append(idle, c), append(readers, r)
	}
	cl, err := Dial(context.Background(), fx.sock)
	if err != nil {
		t.Fatalf("Dial with %d idle connections held: %v", len(idle), err)
	}
	defer cl.Close()
	if st, err := cl.Stats(context.Background()); err != nil || st.Records != 1 {
		t.Errorf("Stats = %+v, %v; want 1 record", st, err)
	}
	silentUntilClosed(t, idle[0], "the connection idle longest")
	for i := 1; i < 3; i++ {
		fmt.Fprintln(idle[i], `{"op":"stats"}`)
		idle[i].SetReadDeadline(time.Now().Add(time.Minute))
		if line, err := readers[i].ReadString('\n'); err != nil || !strings.Contains(line, `"stats"`) {
			t.Errorf("idle connection %d answered %q, %v; want stats", i, line, err)
		}
	}
}

// TestStreamsMakeRoomLast: a newcomer closes an idle connection rather
// than an event stream, and the stream followed longest only when every
// connection is a stream.
func TestStreamsMakeRoomLast(t *testing.T) {
	fx := serveWith(t, 1, &ServerOptions{MaxConns: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow := func(cl *Client) (chan Event, chan error) {
		events, done, ready := make(chan Event, 10), make(chan error, 1), make(chan struct{})
		go func() {
			done <- cl.Events(ctx, func() { close(ready) }, func(e Event) error { events <- e; return nil }, nil)
		}()
		<-ready
		return events, done
	}
	a := dial(t, fx.sock) // a's idle connection, then its stream
	ev1, done1 := follow(a)
	b := dial(t, fx.sock) // closes a's idle connection, not the stream
	fx.srv.Publish(Event{Kind: "one"})
	if e := <-ev1; e.Kind != "one" {
		t.Errorf("first stream got %+v; want event one", e)
	}
	ev2, done2 := follow(b) // closes b's idle connection: two streams now
	c := dial(t, fx.sock)   // closes the first stream
	if err := <-done1; !errors.Is(err, ErrAgentGone) {
		t.Errorf("first stream ended with %v; want ErrAgentGone", err)
	}
	if _, err := c.Stats(context.Background()); err != nil {
		t.Errorf("Stats on the newcomer: %v", err)
	}
	fx.srv.Publish(Event{Kind: "two"})
	if e := <-ev2; e.Kind != "two" {
		t.Errorf("second stream got %+v; want event two", e)
	}
	cancel()
	if err := <-done2; !errors.Is(err, context.Canceled) {
		t.Errorf("second stream ended with %v; want it alive until cancelled", err)
	}
}

// slowStats holds every Stats until release is closed.
type slowStats struct {
	journal.Store
	entered chan struct{}
	release chan struct{}
}

func (s *slowStats) Stats(ctx context.Context) (journal.Stats, error) {
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return s.Store.Stats(ctx)
}

// TestBusy: with every connection in the middle of a request, a newcomer
// gets ErrBusy naming the cap; once the requests are answered it is
// served.
func TestBusy(t *testing.T) {
	fx := serveWith(t, 1, &ServerOptions{MaxConns: 2})
	fx.srv.Close()
	slow := &slowStats{Store: fx.store, entered: make(chan struct{}), release: make(chan struct{})}
	srv, err := Listen(fx.sock, slow, &ServerOptions{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	errs := make(chan error, 2)
	for range 2 {
		cl := dial(t, fx.sock)
		go func() {
			_, err := cl.Stats(context.Background())
			errs <- err
		}()
		<-slow.entered
	}
	if _, err := Dial(context.Background(), fx.sock); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("Dial with both connections answering = %v; want ErrBusy naming the cap 2", err)
	}
	close(slow.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a held Stats: %v", err)
		}
	}
	// The two turn idle just after their answers are sent.
	for range 200 {
		var c *Client
		if c, err = Dial(context.Background(), fx.sock); err == nil {
			c.Close()
		}
		if !errors.Is(err, ErrBusy) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Dial after the answers: %v", err)
	}
}

// TestClientBoundsAnswers: a process at the socket that greets and then
// sends one endless message (a damaged or foreign agent) must not make the
// client hold more than its bound: it stops reading at maxAnswer and says
// why. The client used to decode the stream with no bound, reading until
// the greeting's timeout or its memory ran out.
func TestClientBoundsAnswers(t *testing.T) {
	defer func(n int) { maxAnswer = n }(maxAnswer)
	maxAnswer = 1 << 20
	for _, when := range []string{"hello", "answer"} {
		t.Run(when, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "agent.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sent := make(chan int64, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					sent <- -1
					return
				}
				defer c.Close()
				r := bufio.NewReader(c)
				r.ReadString('\n') // the client's hello
				if when == "answer" {
					hi, _ := json.Marshal(hello{Protocol: protocolName, Version: Version, Namespace: uuid.NewString(), PID: 1})
					c.Write(append(hi, '\n'))
					r.ReadString('\n') // the request
				}
				chunk := []byte(`{"protocol":"` + strings.Repeat("a", 64<<10))
				var n int64
				for n < 1<<30 {
					c.SetWriteDeadline(time.Now().Add(10 * time.Second))
					m, err := c.Write(chunk)
					n += int64(m)
					if err != nil {
						break
					}
					chunk = []byte(strings.Repeat("a", 64<<10))
				}
				sent <- n
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := Dial(ctx, sock)
			if when == "answer" {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				_, err = cl.Get(ctx, uuid.New())
				cl.Close()
			}
			if !errors.Is(err, ErrAnswerTooLong) {
				t.Errorf("error = %v; want ErrAnswerTooLong", err)
			}
			// What the sender got rid of: the client's bound plus what the
			// socket's buffers held when the client hung up.
			if n := <-sent; n > 8<<20 {
				t.Errorf("the client read %d bytes of one message; want at most about its bound (%d)", n, maxAnswer)
			}
		})
	}
}
