package inspect

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// ServerOptions names the agent in its hello and bounds what a client may
// make it hold. A nil *ServerOptions means the zero values; a zero bound
// means its default.
type ServerOptions struct {
	// Journal is the journal's path, as the hello reports it.
	Journal string
	// Owner is the harness's lease owner name.
	Owner string
	// OnResolve, when set, is told of every record a client resolved, as
	// stored, before the client is answered. It must be quick.
	OnResolve func(ctx context.Context, rec journal.Record)

	// MaxFrame bounds one message a client sends, in bytes. Default
	// DefaultMaxFrame.
	MaxFrame int
	// HandshakeTimeout bounds the wait for the client's hello. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// IdleTimeout bounds the wait for the client's next request, and for
	// the client to take a write. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the connections served at once: one more takes the
	// place of the one idle longest (or the oldest event stream), else is
	// told ErrBusy. Default DefaultMaxConns.
	MaxConns int
}

// The default bounds of ServerOptions.
const (
	DefaultMaxFrame         = 1 << 20
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultMaxConns         = 32
)

// bounds returns opts's bounds with the defaults filled in.
func (o *ServerOptions) bounds() ServerOptions {
	b := *o
	b.MaxFrame = cmp.Or(max(b.MaxFrame, 0), DefaultMaxFrame)
	b.HandshakeTimeout = cmp.Or(max(b.HandshakeTimeout, 0), DefaultHandshakeTimeout)
	b.IdleTimeout = cmp.Or(max(b.IdleTimeout, 0), DefaultIdleTimeout)
	b.MaxConns = cmp.Or(max(b.MaxConns, 0), DefaultMaxConns)
	return b
}

const (
	helloLimit       = 4 << 10     // bounds the client's hello, whatever MaxFrame says
	subscriberBuffer = 1024        // events a slow reader may fall behind before drops
	byeWait          = time.Second // how long Close waits for a reader's last events
)

// Server serves one journal at one socket, safe for concurrent use.
type Server struct {
	store journal.Store
	path  string
	ln    *net.UnixListener
	file  os.FileInfo // the socket Listen made: Close removes only that one
	info  hello
	uid   int // the only uid served: this process's
	lim   ServerOptions

	ctx    context.Context // ends at Close: requests in progress stop
	cancel context.CancelFunc
	bye    chan struct{} // closed at Close: event streams end
	wg     sync.WaitGroup

	mu     sync.Mutex // guards conns, subs and closed
	conns  map[*serverConn]struct{}
	subs   map[*subscriber]struct{}
	closed bool
	nsubs  atomic.Int32 // len(subs), for Publish's fast path
}

type serverConn struct {
	c *net.UnixConn
	w *deadlineWriter
	// rank orders the connections a newcomer may close, the least first:
	// when it turned idle (ns after epoch), streams after idle ones; 0
	// while greeting or answering (never closed); -1 once closed.
	rank atomic.Int64
}

const streamRank = 1 << 62

var epoch = time.Now()

// idle ranks sc as idle from now, after offset.
func (sc *serverConn) idle(offset int64) { sc.rank.Store(offset + 1 + int64(time.Since(epoch))) }

// deadlineWriter gives every write a deadline of its own.
type deadlineWriter struct {
	c     *net.UnixConn
	limit atomic.Int64 // a time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.c.SetWriteDeadline(time.Now().Add(time.Duration(d.limit.Load())))
	return d.c.Write(p)
}

type subscriber struct {
	ch      chan Event
	dropped atomic.Int64
}

// Listen serves store at the socket path, mode 0600. A stale socket there
// is removed first; a live one, or a file that is not a socket, is
// ErrSocketInUse.
func Listen(path string, store journal.Store, opts *ServerOptions) (*Server, error) {
	if opts == nil {
		opts = &ServerOptions{}
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	addr, done, err := reachable(path)
	if err != nil {
		return nil, fmt.Errorf("inspect: listen on %s: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	done()
	if err != nil {
		return nil, fmt.Errorf("inspect: listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // Close removes it by its real path, not /proc's
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("inspect: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("inspect: %w", err)
	}
	lim := opts.bounds()
	s := &Server{
		store: store, path: path, ln: ln, uid: os.Getuid(), file: fi, lim: lim,
		info: hello{Protocol: protocolName, Version: Version, Namespace: store.Namespace().String(),
			Journal: opts.Journal, PID: os.Getpid(), Owner: opts.Owner,
			MaxFrame: lim.MaxFrame, IdleMS: lim.IdleTimeout.Milliseconds()},
		bye:   make(chan struct{}),
		conns: map[*serverConn]struct{}{},
		subs:  map[*subscriber]struct{}{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// removeStale removes the socket at path when nobody answers on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("inspect: %w: %s is not a socket; remove it, or turn the agent's inspection off", ErrSocketInUse, path)
	}
	c, err := dialSocket(context.Background(), path)
	if err == nil {
		c.Close()
		return fmt.Errorf("inspect: %w: another process serves %s", ErrSocketInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("inspect: %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("inspect: remove stale socket: %w", err)
	}
	return nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Subscribed reports whether any client follows the events.
func (s *Server) Subscribed() bool { return s.nsubs.Load() > 0 }

// Publish hands e to every follower without waiting; a full buffer drops it.
func (s *Server) Publish(e Event) {
	if !s.Subscribed() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		select {
		case sub.ch <- e:
		default:
			sub.dropped.Add(1)
		}
	}
}

// Close stops serving: it removes the socket, sends event followers a bye
// (within byeWait), and cuts every other connection.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	// Another agent's socket at the same path is left alone.
	if fi, lerr := os.Lstat(s.path); lerr == nil && os.SameFile(fi, s.file) {
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	close(s.bye)
	for sc := range s.conns {
		if sc.rank.Load() >= streamRank {
			sc.w.limit.Store(int64(byeWait))
			sc.c.SetWriteDeadline(time.Now().Add(byeWait))
		} else {
			sc.c.Close()
		}
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // transient (out of descriptors)
			continue
		}
		sc := &serverConn{c: c, w: &deadlineWriter{c: c}}
		sc.w.limit.Store(int64(s.lim.IdleTimeout))
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		if len(s.conns) >= s.lim.MaxConns && !s.makeRoom() {
			s.mu.Unlock()
			s.refuseBusy(c)
			time.Sleep(penalty / 10) // a client dialling in a loop waits in the backlog
			continue
		}
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(sc)
	}
}

// makeRoom closes the connection ranked least, if any; s.mu is held.
func (s *Server) makeRoom() bool {
	for {
		var victim *serverConn
		var best int64
		for sc := range s.conns {
			if r := sc.rank.Load(); r > 0 && (victim == nil || r < best) {
				victim, best = sc, r
			}
		}
		if victim == nil {
			return false
		}
		if victim.rank.CompareAndSwap(best, -1) { // else it just took a request: look again
			delete(s.conns, victim)
			victim.c.Close()
			return true
		}
	}
}

// refuseBusy tells a client beyond MaxConns so, and closes it.
func (s *Server) refuseBusy(c *net.UnixConn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	b, _ := json.Marshal(hello{Protocol: protocolName, Version: Version, Error: &wireError{Code: codeBusy,
		Message: fmt.Sprintf("busy: this agent serves at most %d inspection connections at once", s.lim.MaxConns)}})
	c.Write(append(b, '\n'))
	c.Close()
}

// penalty is how long a connection that broke a bound waits to be closed.
const penalty = 100 * time.Millisecond

// penalize waits out the penalty, or until Close.
func (s *Server) penalize() {
	t := time.NewTimer(penalty)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.bye:
	}
}

// errFrameTooLong is a client message longer than its bound.
var errFrameTooLong = errors.New("message too long")

// readFrame reads one line of at most limit bytes, its newline not counted.
func readFrame(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case err == nil:
			if len(line)-1 > limit {
				return nil, errFrameTooLong
			}
			return line, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		case len(line) > limit:
			return nil, errFrameTooLong
		}
	}
}

// serve answers one connection: hello, then requests.
func (s *Server) serve(sc *serverConn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		sc.c.Close()
	}()
	w := bufio.NewWriter(sc.w)
	enc := json.NewEncoder(w)
	r := bufio.NewReaderSize(sc.c, 16<<10)
	send := func(v any) bool { return enc.Encode(v) == nil }
	flush := func() bool { return w.Flush() == nil }
	reply := func(v any) { send(v); flush() } // a last word before closing
	// read reads one message into v; one too long or not JSON is answered
	// with an error (by answer) and ends the connection.
	read := func(v any, limit int, timeout time.Duration, answer func(*wireError) any) bool {
		sc.c.SetReadDeadline(time.Now().Add(timeout))
		line, err := readFrame(r, limit)
		if errors.Is(err, errFrameTooLong) {
			reply(answer(&wireError{Code: "invalid", Message: fmt.Sprintf(
				"inspect: a message longer than %d bytes; the agent reads at most that many per line", limit)}))
			s.penalize()
			return false
		}
		if err != nil {
			return false
		}
		if err := json.Unmarshal(line, v); err != nil {
			reply(answer(&wireError{Code: "invalid", Message: fmt.Sprintf("inspect: a message that is not one JSON object on one line: %v", err)}))
			return false
		}
		return true
	}
	helloError := func(e *wireError) any { return hello{Protocol: protocolName, Version: Version, Error: e} }
	responseError := func(e *wireError) any { return response{Error: e} }

	uid, known, err := peerUID(sc.c)
	if err != nil || (known && uid != s.uid) {
		msg := fmt.Sprintf("refused: this agent serves only its own user (uid %d), not uid %d", s.uid, uid)
		if err != nil {
			msg = "refused: cannot tell the client's user: " + err.Error()
		}
		reply(helloError(&wireError{Code: codeRefused, Message: msg}))
		return
	}
	var hi hello
	if !read(&hi, helloLimit, s.lim.HandshakeTimeout, helloError) {
		return
	}
	if hi.Protocol != protocolName || hi.Version != Version {
		reply(helloError(&wireError{Code: codeVersion, Message: fmt.Sprintf("the agent speaks inspection protocol %s version %d; the client spoke %q version %d",
			protocolName, Version, hi.Protocol, hi.Version)}))
		return
	}
	sc.idle(0) // before the hello: of clients greeted in turn, the first ranks least
	if !send(s.info) || !flush() {
		return
	}
	for {
		var req request
		if !read(&req, s.lim.MaxFrame, s.lim.IdleTimeout, responseError) {
			return
		}
		if sc.rank.Swap(0) < 0 { // closed to make room
			return
		}
		if req.Op == opEvents {
			s.streamEvents(sc, enc, w)
			return
		}
		if !s.answer(&req, send) || !flush() {
			return
		}
		sc.idle(0)
	}
}

// answer writes the response to one request; false when the client left.
func (s *Server) answer(req *request, send func(any) bool) bool {
	fail := func(err error) bool { return send(response{Error: toWire(err)}) }
	ctx := s.ctx
	switch req.Op {
	case opGet, opResolve:
		key, err := uuid.Parse(req.Key)
		if err != nil {
			return fail(fmt.Errorf("%w: key %q: %v", journal.ErrInvalid, req.Key, err))
		}
		var r journal.Record
		if req.Op == opGet {
			r, err = s.store.Get(ctx, key)
		} else {
			if req.Resolution == nil {
				return fail(fmt.Errorf("%w: resolve without a resolution", journal.ErrInvalid))
			}
			var res journal.Resolution
			if res, err = req.Resolution.toResolution(); err != nil {
				return fail(err)
			}
			if r, err = s.store.Resolve(ctx, key, res); err == nil && s.lim.OnResolve != nil {
				s.lim.OnResolve(ctx, r)
			}
		}
		if err != nil {
			return fail(err)
		}
		return send(response{Record: FromRecord(&r)})
	case opList:
		var f journal.Filter
		if req.Filter != nil {
			var err error
			if f, err = req.Filter.toFilter(); err != nil {
				return fail(err)
			}
		}
		for r, err := range s.store.List(ctx, f) {
			if err != nil {
				return fail(err)
			}
			if !send(response{Record: FromRecord(&r)}) {
				return false
			}
		}
		return send(response{End: true})
	case opStats:
		st, err := s.store.Stats(ctx)
		if err != nil {
			return fail(err)
		}
		return send(response{Stats: fromStats(&st)})
	case opGC:
		res, err := s.store.GC(ctx, journal.GCOptions{DryRun: true})
		if err != nil {
			return fail(err)
		}
		return send(response{GC: &GC{Removed: res.Removed, KeptUnknown: res.KeptUnknown}})
	}
	return fail(fmt.Errorf("%w: unknown request %q", journal.ErrInvalid, req.Op))
}

// streamEvents turns the connection into an event stream.
func (s *Server) streamEvents(sc *serverConn, enc *json.Encoder, w *bufio.Writer) {
	sub := &subscriber{ch: make(chan Event, subscriberBuffer)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	sc.idle(streamRank)
	s.subs[sub] = struct{}{}
	s.nsubs.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.nsubs.Add(-1)
		s.mu.Unlock()
	}()
	// A read returns when the client leaves (or sends what it should not).
	sc.c.SetReadDeadline(time.Time{})
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		sc.c.Read(b[:])
		close(gone)
	}()
	send := func(e *Event) bool {
		if n := sub.dropped.Swap(0); n > 0 {
			if enc.Encode(response{Dropped: int(n)}) != nil {
				return false
			}
		}
		if e != nil && enc.Encode(response{Event: e}) != nil {
			return false
		}
		return true
	}
	if enc.Encode(response{Subscribed: true}) != nil || w.Flush() != nil {
		return
	}
	for {
		select {
		case e := <-sub.ch:
			if !send(&e) || w.Flush() != nil {
				return
			}
		case <-s.bye:
		drain:
			for {
				select {
				case e := <-sub.ch:
					if !send(&e) {
						return
					}
				default:
					break drain
				}
			}
			if send(nil) && enc.Encode(response{Bye: "the agent is closing its journal"}) == nil {
				w.Flush()
			}
			return
		case <-gone:
			return
		}
	}
}
