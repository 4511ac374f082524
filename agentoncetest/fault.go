package agentoncetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fault is one kind of failure the fault injectors can cause.
type Fault uint8

const (
	// NoFault lets the request through untouched.
	NoFault Fault = iota
	// LoseResponse forwards the request and throws the response away: the
	// caller gets a connection reset on read. Classified maybe-executed.
	LoseResponse
	// Delay forwards the request and holds the response until the
	// request's context ends, then returns its error; without a deadline it
	// delivers the response after MaxDelay. Classified maybe-executed.
	Delay
	// Unavailable answers 503 with Retry-After without forwarding.
	// Classified not-executed.
	Unavailable
	// ResetBeforeSend fails as a dial does (connection refused) without
	// forwarding. Classified not-executed.
	ResetBeforeSend
	// ResetAfterSend drops the connection once the request is written: the
	// caller gets a connection reset. Classified maybe-executed.
	ResetAfterSend
	// Duplicate delivers the request twice, one after the other, and
	// returns the second response.
	Duplicate
)

// AllFaults lists every fault but NoFault, in declaration order.
var AllFaults = []Fault{LoseResponse, Delay, Unavailable, ResetBeforeSend, ResetAfterSend, Duplicate}

var faultNames = [...]string{"none", "lose-response", "delay", "unavailable", "reset-before-send", "reset-after-send", "duplicate"}

// String returns the fault's lower-case name.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// ParseFault parses a fault's name as String writes it.
func ParseFault(name string) (Fault, error) {
	if i := slices.Index(faultNames[:], name); i >= 0 {
		return Fault(i), nil
	}
	return 0, fmt.Errorf("unknown fault %q (want one of %s)", name, strings.Join(faultNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler (a script's faults are
// written by name).
func (f Fault) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (f *Fault) UnmarshalText(b []byte) error {
	v, err := ParseFault(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// FaultOptions says which requests fail, and how. A nil *FaultOptions
// means no faults; each field's zero value is its default.
//
// Request n (from 1, in arrival order) gets Script[n-1] if the script is
// that long, and otherwise, with probability Rate, a fault drawn from
// Kinds; the draw depends only on Seed and n.
type FaultOptions struct {
	// Seed seeds the schedule (math/rand/v2 PCG). Zero is a valid seed.
	Seed uint64
	// Rate is the probability, in [0, 1], that an unscripted request gets
	// a fault. Zero means none.
	Rate float64
	// Kinds are the faults Rate draws from, uniformly. Nil means
	// AllFaults.
	Kinds []Fault
	// Script fixes the fault of the first len(Script) requests; NoFault
	// entries let a request through.
	Script []Fault
	// RetryAfter is the wait an Unavailable answer asks for, sent as
	// Retry-After (seconds, rounded up) and Retry-After-Ms. Zero means 1s.
	RetryAfter time.Duration
	// MaxDelay bounds a Delay fault on a request whose context has no
	// deadline. Zero means 10 seconds.
	MaxDelay time.Duration
	// Match selects the requests a FaultTransport numbers and may fail;
	// the others pass through untouched. Nil means every request.
	Match func(r *http.Request) bool
}

// schedule is the fault plan and the count of what it injected.
type schedule struct {
	o FaultOptions // with every default applied

	// mu guards n and counts.
	mu     sync.Mutex
	n      int
	counts [len(faultNames)]int
}

func newSchedule(opts *FaultOptions) *schedule {
	if opts == nil {
		opts = &FaultOptions{}
	}
	if opts.Rate < 0 || opts.Rate > 1 || math.IsNaN(opts.Rate) {
		panic(fmt.Sprintf("agentoncetest: FaultOptions.Rate %v is outside [0, 1]", opts.Rate))
	}
	s := &schedule{o: *opts}
	o := &s.o
	o.Kinds = append([]Fault(nil), o.Kinds...)
	o.Script = append([]Fault(nil), o.Script...)
	if len(o.Kinds) == 0 {
		o.Kinds = AllFaults
	}
	for _, f := range append(append([]Fault(nil), o.Kinds...), o.Script...) {
		if int(f) >= len(faultNames) {
			panic(fmt.Sprintf("agentoncetest: FaultOptions holds an unknown fault %d", f))
		}
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 10 * time.Second
	}
	return s
}

// FaultFor returns the fault opts schedules for request n (from 1),
// without injecting anything: the plan a test can assert against.
func FaultFor(opts *FaultOptions, n int) Fault {
	return newSchedule(opts).plan(n)
}

func (s *schedule) plan(n int) Fault {
	if n <= len(s.o.Script) {
		return s.o.Script[n-1]
	}
	if s.o.Rate == 0 {
		return NoFault
	}
	r := rand.New(rand.NewPCG(s.o.Seed, uint64(n)))
	if r.Float64() >= s.o.Rate {
		return NoFault
	}
	return s.o.Kinds[r.IntN(len(s.o.Kinds))]
}

// next numbers a request and counts the fault it gets.
func (s *schedule) next() (int, Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	f := s.plan(s.n)
	s.counts[f]++
	return s.n, f
}

// Injected returns how many times fault f was chosen.
func (s *schedule) Injected(f Fault) int {
	if int(f) >= len(faultNames) {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[f]
}

// TotalInjected returns how many requests (or calls) got a fault.
func (s *schedule) TotalInjected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for f, c := range s.counts {
		if Fault(f) != NoFault {
			n += c
		}
	}
	return n
}

// Requests returns how many requests were numbered: those Match selected
// by a FaultTransport, every call of a FaultFunc.
func (s *schedule) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// FaultError is the error an injected fault returns. It wraps the error a
// real failure of that kind gives (a *net.OpError for resets and
// refusals, the context's error for a delay, an *UnavailableError for a
// tool function's 503), so that retryclass classifies it alike.
type FaultError struct {
	Fault Fault
	// Request is the request's (or call's) number, from 1.
	Request int
	Err     error
}

// Error names the fault, the request number and the error it stands for.
func (e *FaultError) Error() string {
	return "injected " + e.Fault.String() + " on request " + strconv.Itoa(e.Request) + ": " + e.Err.Error()
}

// Unwrap returns the underlying network-shaped error.
func (e *FaultError) Unwrap() error { return e.Err }

// UnavailableError is a tool function's 503 Service Unavailable with
// Retry-After, as retryclass reads it: the request was not executed.
type UnavailableError struct {
	Wait time.Duration
}

// Error says 503 and how long the server asked to wait.
func (e *UnavailableError) Error() string {
	return "503 Service Unavailable (retry after " + e.Wait.String() + ")"
}

// StatusCode returns 503.
func (e *UnavailableError) StatusCode() int { return http.StatusServiceUnavailable }

// RetryAfter returns the wait the answer asks for.
func (e *UnavailableError) RetryAfter() time.Duration { return e.Wait }

// connReset is the error a peer's reset gives while reading (op "read")
// or writing (op "write").
func connReset(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
}

// dialRefused is the error of a connection that never opened.
func dialRefused(addr string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(addr), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// FaultTransport is an http.RoundTripper that injects faults in front of
// another. It is safe for concurrent use. Put it under whatever sets the
// Idempotency-Key, so that retries cross it too.
type FaultTransport struct {
	next http.RoundTripper
	*schedule
}

// NewFaultTransport wraps next (nil means http.DefaultTransport). It
// panics if opts holds a Rate outside [0, 1] or an unknown fault.
func NewFaultTransport(next http.RoundTripper, opts *FaultOptions) *FaultTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	s := newSchedule(opts)
	return &FaultTransport{next: next, schedule: s}
}

// RoundTrip implements http.RoundTripper.
func (t *FaultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.o.Match != nil && !t.o.Match(req) {
		return t.next.RoundTrip(req)
	}
	n, f := t.schedule.next()
	switch f {
	case LoseResponse:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		drain(resp)
		return nil, &FaultError{Fault: f, Request: n, Err: connReset("read")}
	case Delay:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		timer := time.NewTimer(t.o.MaxDelay)
		defer timer.Stop()
		select {
		case <-req.Context().Done():
			drain(resp)
			return nil, &FaultError{Fault: f, Request: n, Err: req.Context().Err()}
		case <-timer.C:
			return resp, nil
		}
	case Unavailable:
		closeBody(req)
		return t.unavailable(req), nil
	case ResetBeforeSend:
		closeBody(req)
		return nil, &FaultError{Fault: f, Request: n, Err: dialRefused(req.URL.Host)}
	case ResetAfterSend:
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { cancel() },
		})
		resp, err := t.next.RoundTrip(req.WithContext(ctx))
		if err == nil {
			drain(resp) // a RoundTripper without traces answered in full
		}
		return nil, &FaultError{Fault: f, Request: n, Err: connReset("read")}
	case Duplicate:
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		first := cloneWithBody(req, body)
		resp, err := t.next.RoundTrip(first)
		if err != nil {
			return nil, err
		}
		drain(resp)
		return t.next.RoundTrip(cloneWithBody(req, body))
	}
	return t.next.RoundTrip(req)
}

func (t *FaultTransport) unavailable(req *http.Request) *http.Response {
	body := `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"injected by agentoncetest; the request was not executed"}`
	h := http.Header{}
	h.Set("Content-Type", "application/problem+json")
	secs := int64((t.o.RetryAfter + time.Second - 1) / time.Second)
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(max(t.o.RetryAfter.Milliseconds(), 1), 10))
	return &http.Response{
		Status:        "503 Service Unavailable",
		StatusCode:    http.StatusServiceUnavailable,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// closeBody honours the RoundTripper contract: the request body is closed
// even when nothing is sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

func cloneWithBody(req *http.Request, body []byte) *http.Request {
	c := req.Clone(req.Context())
	if body == nil {
		c.Body = nil
		return c
	}
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	c.ContentLength = int64(len(body))
	return c
}

// FaultFunc injects faults into a tool function of the shape the harness
// registers; its Call method is the wrapped function. It is safe for
// concurrent use. Each fault is what a tool built on a connection sees:
//
//   - LoseResponse, ResetAfterSend: the function runs to the end, its
//     result is thrown away, and a connection reset is returned (on read,
//     and on write respectively);
//   - Delay: the function runs, then the result is held until ctx ends
//     (the tool's timeout) and ctx's error is returned; without a
//     deadline it is returned after MaxDelay;
//   - Unavailable: the function does not run; an *UnavailableError (503,
//     Retry-After) is returned;
//   - ResetBeforeSend: the function does not run; a dial error is
//     returned;
//   - Duplicate: the function runs twice and the second result is
//     returned.
type FaultFunc struct {
	fn func(context.Context, json.RawMessage) (json.RawMessage, error)
	*schedule
}

// NewFaultFunc wraps fn. It panics on bad opts as NewFaultTransport does;
// opts.Match is ignored.
func NewFaultFunc(fn func(ctx context.Context, input json.RawMessage) (json.RawMessage, error), opts *FaultOptions) *FaultFunc {
	return &FaultFunc{fn: fn, schedule: newSchedule(opts)}
}

// Call runs the wrapped function under the schedule.
func (f *FaultFunc) Call(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	n, fault := f.next()
	switch fault {
	case LoseResponse, ResetAfterSend:
		if _, err := f.fn(ctx, input); err != nil {
			return nil, err
		}
		op := "read"
		if fault == ResetAfterSend {
			op = "write"
		}
		return nil, &FaultError{Fault: fault, Request: n, Err: connReset(op)}
	case Delay:
		out, err := f.fn(ctx, input)
		if err != nil {
			return nil, err
		}
		timer := time.NewTimer(f.o.MaxDelay)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, &FaultError{Fault: fault, Request: n, Err: ctx.Err()}
		case <-timer.C:
			return out, nil
		}
	case Unavailable:
		return nil, &FaultError{Fault: fault, Request: n, Err: &UnavailableError{Wait: f.o.RetryAfter}}
	case ResetBeforeSend:
		return nil, &FaultError{Fault: fault, Request: n, Err: dialRefused("tool")}
	case Duplicate:
		if _, err := f.fn(ctx, input); err != nil {
			return nil, err
		}
		return f.fn(ctx, input)
	}
	return f.fn(ctx, input)
}
