package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// Client is a journal.Store whose reads and Resolve are answered by the
// running agent; its other writes return ErrNotServed. It is safe for
// concurrent use.
type Client struct {
	path string
	info hello
	ns   uuid.UUID

	mu     sync.Mutex // guards c and closed
	c      *clientConn
	closed bool
}

// Info says which agent answers.
type Info struct {
	// Journal is the journal's path as the agent opened it.
	Journal string
	PID     int
	// Owner is the agent's lease owner name.
	Owner string
}

// helloTimeout bounds the greeting.
const helloTimeout = 5 * time.Second

type clientConn struct {
	c    *net.UnixConn
	r    *bufio.Reader
	enc  *json.Encoder
	used time.Time // the end of its last request
}

// maxAnswer bounds one message the client reads (a variable for tests).
var maxAnswer = 64 << 20

// decode reads one message into v; one too long spends the connection.
func (c *clientConn) decode(v any) error {
	line, err := readFrame(c.r, maxAnswer)
	if errors.Is(err, errFrameTooLong) {
		c.c.Close()
		return fmt.Errorf("%w: more than %d bytes in one message", ErrAnswerTooLong, maxAnswer)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// Dial connects to the agent serving the socket at path and greets it.
func Dial(ctx context.Context, path string) (*Client, error) {
	cl := &Client{path: path}
	c, hi, err := cl.connect(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := uuid.Parse(hi.Namespace)
	if err != nil {
		c.c.Close()
		return nil, fmt.Errorf("agent serving %s: namespace %q: %w", path, hi.Namespace, err)
	}
	cl.c, cl.info, cl.ns = c, hi, ns
	return cl, nil
}

// dialSocket connects to the socket at path, without a greeting.
func dialSocket(ctx context.Context, path string) (*net.UnixConn, error) {
	addr, done, err := reachable(path)
	if err != nil {
		return nil, err
	}
	defer done()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// connect dials and greets, changing nothing in cl.
func (cl *Client) connect(ctx context.Context) (*clientConn, hello, error) {
	var hi hello
	c, err := dialSocket(ctx, cl.path)
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return nil, hi, fmt.Errorf("%w at %s: %v", ErrNoAgent, cl.path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, hi, fmt.Errorf("%w: %s: %v", ErrForeignUser, cl.path, err)
	case err != nil:
		return nil, hi, fmt.Errorf("inspect: %s: %w", cl.path, err)
	}
	if uid, known, err := peerUID(c); err != nil || (known && uid != os.Getuid()) {
		c.Close()
		if err != nil {
			return nil, hi, fmt.Errorf("inspect: %s: cannot tell the agent's user: %w", cl.path, err)
		}
		return nil, hi, fmt.Errorf("%w: the agent serving %s runs as uid %d, and you are uid %d; run agentctl as the agent's user",
			ErrForeignUser, cl.path, uid, os.Getuid())
	}
	cc := &clientConn{c: c, r: bufio.NewReaderSize(c, 16<<10), enc: json.NewEncoder(c), used: time.Now()}
	c.SetDeadline(time.Now().Add(helloTimeout)) // an agent that never greets
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	// An agent that refuses answers without reading: read its hello even
	// when sending ours failed.
	werr := cc.enc.Encode(hello{Protocol: protocolName, Version: Version})
	err = cc.decode(&hi)
	if err == nil && hi.Error == nil {
		err = werr
	}
	if stop() {
		c.SetDeadline(time.Time{})
	} else if err == nil {
		err = ctx.Err() // the deadline it set stays: the connection is spent
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, hi, ctx.Err()
		}
		return nil, hi, cl.gone(err)
	}
	switch {
	case hi.Error != nil:
		c.Close()
		return nil, hi, fmt.Errorf("agent serving %s: %w", cl.path, fromWire(hi.Error))
	case hi.Protocol != protocolName || hi.Version != Version:
		c.Close()
		return nil, hi, fmt.Errorf("%w: the agent serving %s speaks %q version %d; this agentctl speaks version %d: use the agentctl of the agent's agentonce version",
			ErrVersion, cl.path, hi.Protocol, hi.Version, Version)
	}
	return cc, hi, nil
}

// gone wraps a connection failure mid-answer.
func (cl *Client) gone(err error) error {
	if errors.Is(err, ErrAnswerTooLong) {
		return fmt.Errorf("agent serving %s (pid %d): %w", cl.path, cl.info.PID, err)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("agent serving %s (pid %d): %w: %v", cl.path, cl.info.PID, ErrAgentGone, err)
}

// Info says which agent answers.
func (cl *Client) Info() Info {
	return Info{Journal: cl.info.Journal, PID: cl.info.PID, Owner: cl.info.Owner}
}

// Path returns the socket's path.
func (cl *Client) Path() string { return cl.path }

// roundTrip sends req and decodes one response on the shared connection.
func (cl *Client) roundTrip(ctx context.Context, req *request) (*response, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, fmt.Errorf("inspect: %s: %w", cl.path, journal.ErrClosed)
	}
	if cl.c == nil {
		c, _, err := cl.connect(ctx)
		if err != nil {
			return nil, err
		}
		cl.c = c
	}
	if b, err := json.Marshal(req); err == nil && cl.info.MaxFrame > 0 && len(b) > cl.info.MaxFrame {
		return nil, fmt.Errorf("%w: a %s request of %d bytes; the agent serving %s reads at most %d per message (resolve so large an output on the journal of the stopped agent)",
			journal.ErrInvalid, req.Op, len(b), cl.path, cl.info.MaxFrame)
	}
	// One quiet for half the agent's idle timeout may be closed meanwhile.
	if idle := time.Duration(cl.info.IdleMS) * time.Millisecond; idle > 0 && time.Since(cl.c.used) > idle/2 {
		cl.c.c.Close()
		c, _, err := cl.connect(ctx)
		if err != nil {
			cl.c = nil
			return nil, err
		}
		cl.c = c
	}
	c := cl.c
	defer func() { c.used = time.Now() }()
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var resp response
	err := c.enc.Encode(req)
	if err == nil {
		err = c.decode(&resp)
	}
	if err != nil {
		c.c.Close()
		cl.c = nil
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cl.gone(err)
	}
	if resp.Error != nil {
		return nil, fromWire(resp.Error)
	}
	return &resp, nil
}

func (cl *Client) record(ctx context.Context, req *request) (journal.Record, error) {
	resp, err := cl.roundTrip(ctx, req)
	if err != nil {
		return journal.Record{}, err
	}
	if resp.Record == nil {
		return journal.Record{}, cl.gone(errors.New("an answer without the record"))
	}
	return resp.Record.ToRecord()
}

func (cl *Client) notServed(op string) error {
	return fmt.Errorf("journal %s: %w: the running agent (pid %d) serves reads and resolve, not %s: %w",
		cl.info.Journal, journal.ErrInUse, cl.info.PID, op, ErrNotServed)
}

// Namespace returns the journal's namespace, as the agent's hello gave it.
func (cl *Client) Namespace() uuid.UUID { return cl.ns }

// Begin is not served: the running agent is the journal's writer.
func (cl *Client) Begin(context.Context, journal.BeginRequest) (journal.BeginResult, error) {
	return journal.BeginResult{}, cl.notServed("begin")
}

// StartAttempt is not served.
func (cl *Client) StartAttempt(context.Context, journal.AttemptRequest) error {
	return cl.notServed("start attempt")
}

// Renew is not served.
func (cl *Client) Renew(context.Context, journal.RenewRequest) (time.Time, error) {
	return time.Time{}, cl.notServed("renew")
}

// Complete is not served.
func (cl *Client) Complete(context.Context, journal.Completion) (journal.Record, error) {
	return journal.Record{}, cl.notServed("complete")
}

// Import is not served: stop the agent to import.
func (cl *Client) Import(context.Context, journal.Record) error { return cl.notServed("import") }

// Resolve asks the agent to resolve an intent (see journal.Store).
func (cl *Client) Resolve(ctx context.Context, key uuid.UUID, r journal.Resolution) (journal.Record, error) {
	return cl.record(ctx, &request{Op: opResolve, Key: key.String(), Resolution: fromResolution(&r)})
}

// Get returns the record for key from the agent's journal.
func (cl *Client) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	return cl.record(ctx, &request{Op: opGet, Key: key.String()})
}

// Stats counts the agent's journal.
func (cl *Client) Stats(ctx context.Context) (journal.Stats, error) {
	resp, err := cl.roundTrip(ctx, &request{Op: opStats})
	if err != nil {
		return journal.Stats{}, err
	}
	if resp.Stats == nil {
		return journal.Stats{}, cl.gone(errors.New("an answer without the stats"))
	}
	return resp.Stats.toStats()
}

// GC with DryRun counts what the agent's GC would remove.
func (cl *Client) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if !opts.DryRun {
		return journal.GCResult{}, cl.notServed("gc")
	}
	resp, err := cl.roundTrip(ctx, &request{Op: opGC})
	if err != nil {
		return journal.GCResult{}, err
	}
	if resp.GC == nil {
		return journal.GCResult{}, cl.gone(errors.New("an answer without the counts"))
	}
	return journal.GCResult{Removed: resp.GC.Removed, KeptUnknown: resp.GC.KeptUnknown}, nil
}

// List yields the agent's records matching f, on a connection of its own.
func (cl *Client) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		err := cl.stream(ctx, &request{Op: opList, Filter: fromFilter(&f)}, func(resp *response) (bool, error) {
			if resp.Record == nil {
				return resp.End, nil
			}
			r, err := resp.Record.ToRecord()
			return !yield(r, err) || err != nil, nil
		})
		if err != nil {
			yield(journal.Record{}, err)
		}
	}
}

// Events follows the agent's events on a connection of its own, calling
// onEvent for each in order, onDropped (when not nil) with the count of
// events lost to a slow reader, and subscribed (when not nil) once every
// later event will follow. It returns nil when the agent said bye,
// ErrAgentGone when the connection ended without one, ctx's error, or
// onEvent's.
func (cl *Client) Events(ctx context.Context, subscribed func(), onEvent func(Event) error, onDropped func(int)) error {
	return cl.stream(ctx, &request{Op: opEvents}, func(resp *response) (bool, error) {
		switch {
		case resp.Subscribed:
			if subscribed != nil {
				subscribed()
			}
		case resp.Dropped > 0:
			if onDropped != nil {
				onDropped(resp.Dropped)
			}
		case resp.Event != nil:
			return false, onEvent(*resp.Event)
		}
		return resp.Bye != "", nil
	})
}

// stream sends req on a connection of its own and hands each response on.
func (cl *Client) stream(ctx context.Context, req *request, each func(*response) (done bool, err error)) error {
	c, _, err := cl.connect(ctx)
	if err != nil {
		return err
	}
	defer c.c.Close()
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := c.enc.Encode(req); err != nil {
		return cl.gone(err)
	}
	for {
		var resp response
		if err := c.decode(&resp); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return cl.gone(err)
		}
		if resp.Error != nil {
			return fromWire(resp.Error)
		}
		if done, err := each(&resp); done || err != nil {
			return err
		}
	}
}

// Close closes the shared connection; later calls return ErrClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.closed = true
	if cl.c != nil {
		err := cl.c.c.Close()
		cl.c = nil
		return err
	}
	return nil
}

var _ journal.Store = (*Client)(nil)
