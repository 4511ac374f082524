package agentoncetest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Defaults of DownstreamOptions.
const (
	// DefaultKeyHeader is the request header that carries the idempotency
	// key, as Stripe and the IETF draft name it.
	DefaultKeyHeader = "Idempotency-Key"
	// DefaultReplayedHeader marks a response replayed from the store, as
	// Stripe marks it.
	DefaultReplayedHeader = "Idempotent-Replayed"
	// DefaultKeyTTL is how long a stored response is kept (Stripe keeps
	// keys at least 24 hours).
	DefaultKeyTTL = 24 * time.Hour
	// DefaultMaxBodyBytes caps a request body the downstream fingerprints.
	DefaultMaxBodyBytes = 1 << 20
	// MaxKeyLength is the longest key accepted (Stripe's limit).
	MaxKeyLength = 255
)

// ProblemType is the "type" member of every problem-details body the
// Downstream writes.
const ProblemType = "https://github.com/agentonce/agentonce/agentoncetest#idempotency"

// DownstreamOptions configures a Downstream. A nil *DownstreamOptions means
// defaults; each field's zero value is its default.
type DownstreamOptions struct {
	// KeyHeader is the request header carrying the key. Empty means
	// DefaultKeyHeader, where downstream.Transport puts a Keyed or
	// Idempotent tool's key. An Unkeyed tool's key arrives in
	// downstream.DefaultUnkeyedKeyHeader instead: set KeyHeader to it, with
	// Passthrough, to count an Unkeyed tool's effects per intent.
	KeyHeader string

	// ReplayedHeader is set to "true" on a replayed response. Empty means
	// DefaultReplayedHeader ("Idempotent-Replayed").
	ReplayedHeader string

	// Require reports whether r must carry a key; a request that must and
	// does not gets 400. Nil means: POST and PATCH require a key.
	Require func(r *http.Request) bool

	// ClientID names the client a request comes from: the same key from two
	// clients is two keys. Nil means one scope for every request.
	ClientID func(r *http.Request) string

	// TTL is how long a stored response is kept, from the first request
	// with the key; a request after that runs anew. Zero means DefaultKeyTTL.
	TTL time.Duration

	// MaxBodyBytes caps the request body; a larger one gets 413 and does
	// not run. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// StoreServerErrors stores and replays 5xx responses like any other.
	// False (the default) releases the key, so a retry runs the handler
	// again: right for a handler whose 5xx means "nothing was committed";
	// Stripe, whose 500s may follow a partial effect, stores them.
	StoreServerErrors bool

	// IsEffect reports whether a handler's answer with status counts as a
	// side effect. Nil means status < 400.
	IsEffect func(status int) bool

	// StateFile, when set, keeps the stored responses and the effect
	// counts in a file that survives the process: NewDownstream loads it,
	// and every stored response rewrites it atomically before the response
	// is sent. Empty means memory only.
	StateFile string

	// Passthrough turns the protection off: nothing is required, stored or
	// replayed, and every request runs the handler. Effects are still
	// counted per key (read from KeyHeader), so Duplicates shows what an
	// unprotected API does with the retries it gets.
	Passthrough bool

	// Now is the clock, a test seam. Nil means time.Now.
	Now func() time.Time
}

// Downstream is an http.Handler that implements the server side of the
// Idempotency-Key contract in front of another handler, and counts the
// side effects that handler really performed. It is safe for concurrent
// use.
//
// For each request that carries a key (or must carry one):
//
//   - no record for (client, key): the wrapped handler runs; its response
//     (status, header, body) is stored and sent;
//   - a stored response with the same fingerprint (method, path and query,
//     body): the stored response is sent again, marked with the replayed
//     header; the handler does not run;
//   - a different fingerprint: 422, the handler does not run;
//   - the first request with the key is still running: 409;
//   - no key where Require says one is needed: 400; a malformed key: 400.
//
// Safe methods (GET, HEAD, OPTIONS, TRACE) pass straight through, as
// Stripe ignores keys on GET; with Passthrough every request does, counted.
type Downstream struct {
	next http.Handler
	o    DownstreamOptions // with every default applied

	// mu guards entries, effects, calls and inserts.
	mu      sync.Mutex
	entries map[scopedKey]*entry
	// effects and calls count per scoped key; they outlive entries (TTL).
	effects map[scopedKey]int
	calls   map[scopedKey]int
	inserts int

	// persistMu orders state-file writes: a later snapshot lands last.
	persistMu sync.Mutex
}

type scopedKey struct {
	Client string
	Key    string
}

type entry struct {
	fingerprint [sha256.Size]byte
	created     time.Time
	done        bool
	status      int
	header      http.Header
	body        []byte
}

// NewDownstream wraps next. It returns an error only when
// opts.StateFile exists and cannot be read or is not a state file.
func NewDownstream(next http.Handler, opts *DownstreamOptions) (*Downstream, error) {
	if opts == nil {
		opts = &DownstreamOptions{}
	}
	d := &Downstream{
		next:    next,
		o:       *opts,
		entries: make(map[scopedKey]*entry),
		effects: make(map[scopedKey]int),
		calls:   make(map[scopedKey]int),
	}
	o := &d.o
	o.KeyHeader = cmp.Or(o.KeyHeader, DefaultKeyHeader)
	o.ReplayedHeader = cmp.Or(o.ReplayedHeader, DefaultReplayedHeader)
	if o.Require == nil {
		o.Require = func(r *http.Request) bool { return r.Method == http.MethodPost || r.Method == http.MethodPatch }
	}
	if o.TTL <= 0 {
		o.TTL = DefaultKeyTTL
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.IsEffect == nil {
		o.IsEffect = func(status int) bool { return status < 400 }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if d.o.StateFile != "" {
		if err := d.load(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Server is a Downstream on a real loopback HTTP server.
type Server struct {
	*httptest.Server
	Downstream *Downstream
}

// StartServer starts a loopback server running a Downstream in front of h,
// for a program that is not a test; the caller closes it. It fails only if
// the Downstream cannot be made (an unreadable opts.StateFile).
func StartServer(h http.Handler, opts *DownstreamOptions) (*Server, error) {
	d, err := NewDownstream(h, opts)
	if err != nil {
		return nil, err
	}
	return &Server{Server: httptest.NewServer(d), Downstream: d}, nil
}

// NewServer is StartServer for a test: it closes the server when tb's
// test ends, and fails tb if the Downstream cannot be made.
func NewServer(tb testing.TB, h http.Handler, opts *DownstreamOptions) *Server {
	tb.Helper()
	s, err := StartServer(h, opts)
	if err != nil {
		tb.Fatalf("agentoncetest.NewServer: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Effects returns how many side effects the wrapped handler performed for
// key, summed over clients. Requests without a key count under "".
func (d *Downstream) Effects(key string) int {
	return d.tally(d.effects, func(k scopedKey, c int) int { return when(k.Key == key, c) })
}

// Calls returns how many times the wrapped handler ran for key, summed
// over clients, whatever it answered (a 5xx included).
func (d *Downstream) Calls(key string) int {
	return d.tally(d.calls, func(k scopedKey, c int) int { return when(k.Key == key, c) })
}

// TotalEffects returns how many side effects the wrapped handler
// performed, over all keys and keyless requests.
func (d *Downstream) TotalEffects() int {
	return d.tally(d.effects, func(_ scopedKey, c int) int { return c })
}

// Duplicates returns the number of side effects beyond the first for each
// (client, key), which the contract exists to keep at zero. Keyless
// requests are not counted.
func (d *Downstream) Duplicates() int {
	return d.tally(d.effects, func(k scopedKey, c int) int { return when(k.Key != "", max(c-1, 0)) })
}

// Keys returns how many distinct (client, key) pairs had at least one
// side effect.
func (d *Downstream) Keys() int {
	return d.tally(d.effects, func(k scopedKey, c int) int { return when(k.Key != "", min(c, 1)) })
}

// tally sums f over the counts of m.
func (d *Downstream) tally(m map[scopedKey]int, f func(k scopedKey, c int) int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for k, c := range m {
		n += f(k, c)
	}
	return n
}

// when is n if ok, else 0.
func when(ok bool, n int) int {
	if ok {
		return n
	}
	return 0
}

// ServeHTTP implements http.Handler.
func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		d.next.ServeHTTP(w, r)
		return
	}
	if d.o.Passthrough {
		d.runStored(w, r, d.passthroughKey(r), nil)
		return
	}
	req, ref := d.validate(r)
	switch {
	case ref != nil:
		writeProblem(w, ref.status, ref.title, ref.detail)
		return
	case req == nil: // keyless, and no key is required
		d.runStored(w, r, scopedKey{}, nil)
		return
	}
	v, e := d.decide(req.sk, req.fp)
	switch v {
	case refuseMismatch:
		writeProblem(w, http.StatusUnprocessableEntity, d.o.KeyHeader+" is already used",
			"This "+d.o.KeyHeader+" was used with a different request (method, path or body). A key must not be reused across different payloads; this request was not executed.")
	case refuseRunning:
		writeProblem(w, http.StatusConflict, "A request is outstanding for this "+d.o.KeyHeader,
			"A request with the same "+d.o.KeyHeader+" is being processed; retry later with the same key and the same payload.")
	case replayStored:
		h := w.Header()
		maps.Copy(h, e.header.Clone())
		h.Set(d.o.ReplayedHeader, "true")
		w.WriteHeader(e.status)
		_, _ = w.Write(e.body)
	default:
		r.Body = io.NopCloser(bytes.NewReader(req.body))
		d.runStored(w, r, req.sk, e)
	}
}

// passthroughKey is the key a passthrough request is counted under; a
// missing or malformed key counts as none.
func (d *Downstream) passthroughKey(r *http.Request) scopedKey {
	var sk scopedKey
	if values := r.Header.Values(d.o.KeyHeader); len(values) == 1 {
		sk.Key, _ = ParseKey(values[0])
	}
	if sk.Key != "" && d.o.ClientID != nil {
		sk.Client = d.o.ClientID(r)
	}
	return sk
}

// keyedRequest is a request that passed validation with a key.
type keyedRequest struct {
	sk   scopedKey
	body []byte
	fp   [sha256.Size]byte
}

// refusal is a 4xx the downstream sends before the handler runs.
type refusal struct {
	status        int
	title, detail string
}

// validate checks the key header and reads the body (at most
// MaxBodyBytes): the keyed request, nil for a keyless one that needs no
// key, or the refusal to send.
func (d *Downstream) validate(r *http.Request) (*keyedRequest, *refusal) {
	values := r.Header.Values(d.o.KeyHeader)
	if len(values) == 0 {
		if d.o.Require(r) {
			return nil, &refusal{http.StatusBadRequest, d.o.KeyHeader + " is missing",
				"This operation requires an " + d.o.KeyHeader + " header; send one key per intended operation and reuse it on every retry."}
		}
		return nil, nil
	}
	if len(values) > 1 {
		return nil, &refusal{http.StatusBadRequest, d.o.KeyHeader + " is invalid",
			"A request must carry exactly one " + d.o.KeyHeader + " header field; this one carries " + strconv.Itoa(len(values)) + "."}
	}
	key, err := ParseKey(values[0])
	if err != nil {
		return nil, &refusal{http.StatusBadRequest, d.o.KeyHeader + " is invalid", err.Error()}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, d.o.MaxBodyBytes+1))
	if err != nil {
		return nil, &refusal{http.StatusBadRequest, "Request body unreadable", err.Error()}
	}
	if int64(len(body)) > d.o.MaxBodyBytes {
		return nil, &refusal{http.StatusRequestEntityTooLarge, "Request body too large",
			"The body is larger than " + strconv.FormatInt(d.o.MaxBodyBytes, 10) + " bytes."}
	}
	req := &keyedRequest{sk: scopedKey{Key: key}, body: body, fp: fingerprint(r, body)}
	if d.o.ClientID != nil {
		req.sk.Client = d.o.ClientID(r)
	}
	return req, nil
}

// verdict is what the record of a key allows a request with that key.
type verdict int

const (
	runNew         verdict = iota // no live record: the request claimed a new entry
	replayStored                  // the same request is stored: send its response
	refuseMismatch                // the key was used with another request
	refuseRunning                 // the first request with the key still runs
)

// decide looks sk up, dropping a record past its TTL: for runNew the entry
// it claimed, for replayStored a copy of the stored one.
func (d *Downstream) decide(sk scopedKey, fp [sha256.Size]byte) (verdict, *entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.o.Now()
	e := d.entries[sk]
	if e != nil && e.done && !now.Before(e.created.Add(d.o.TTL)) {
		delete(d.entries, sk)
		e = nil
	}
	switch {
	case e == nil:
		e = &entry{fingerprint: fp, created: now}
		d.entries[sk] = e
		return runNew, e
	case e.fingerprint != fp:
		return refuseMismatch, nil
	case !e.done:
		return refuseRunning, nil
	}
	stored := *e
	return replayStored, &stored
}

// runStored runs the handler, counts its effect under sk, stores its
// response in e (nil: a request outside the contract) and sends it.
func (d *Downstream) runStored(w http.ResponseWriter, r *http.Request, sk scopedKey, e *entry) {
	rec := d.run(r, sk, e)
	if err := d.commit(sk, e, rec); err != nil {
		// The effect happened but is not durable: say so; the key is released.
		writeProblem(w, http.StatusInternalServerError, "State file not written", err.Error())
		return
	}
	rec.writeTo(w)
}

// run calls the wrapped handler with a buffering writer. If the handler
// panics, the key is released and the panic goes on to net/http.
func (d *Downstream) run(r *http.Request, sk scopedKey, e *entry) *recorder {
	rec := newRecorder()
	completed := false
	defer func() {
		if !completed {
			d.mu.Lock()
			d.calls[sk]++
			if e != nil && d.entries[sk] == e {
				delete(d.entries, sk)
			}
			d.mu.Unlock()
		}
	}()
	d.next.ServeHTTP(rec, r)
	completed = true
	return rec
}

// commit records the handler's outcome: counts, and the stored response
// unless it is a 5xx not to be stored; with a state file, durably.
func (d *Downstream) commit(sk scopedKey, e *entry, rec *recorder) error {
	status := rec.statusCode()
	kept := status < 500 || d.o.StoreServerErrors
	d.mu.Lock()
	d.calls[sk]++
	if kept && d.o.IsEffect(status) {
		d.effects[sk]++
	}
	store := kept && e != nil
	if store {
		e.status = status
		e.header = rec.sentHeader().Clone()
		e.body = rec.body.Bytes()
		e.done = true
		d.inserts++
		if d.inserts%1024 == 0 {
			d.sweepLocked(d.o.Now())
		}
	} else if e != nil && d.entries[sk] == e {
		delete(d.entries, sk)
	}
	d.mu.Unlock()
	if d.o.StateFile == "" {
		return nil
	}
	if err := d.persist(); err != nil {
		if store {
			d.mu.Lock()
			if d.entries[sk] == e {
				delete(d.entries, sk)
			}
			d.mu.Unlock()
		}
		return err
	}
	return nil
}

// sweepLocked drops stored responses past their TTL. d.mu must be held.
func (d *Downstream) sweepLocked(now time.Time) {
	for k, e := range d.entries {
		if e.done && !now.Before(e.created.Add(d.o.TTL)) {
			delete(d.entries, k)
		}
	}
}

// fingerprint hashes what makes two requests the same: method, path and
// query, and body (not headers: a retry may carry a new request id).
func fingerprint(r *http.Request, body []byte) [sha256.Size]byte {
	h := sha256.New()
	io.WriteString(h, r.Method)
	h.Write([]byte{0})
	io.WriteString(h, r.URL.EscapedPath())
	h.Write([]byte{0})
	io.WriteString(h, r.URL.RawQuery)
	h.Write([]byte{0})
	h.Write(body)
	var fp [sha256.Size]byte
	h.Sum(fp[:0])
	return fp
}

// ParseKey parses an Idempotency-Key header value. It accepts the IETF
// draft's form, a Structured Field string ("8e03978e-..." in double
// quotes, with \" and \\ escapes), and the bare token Stripe and most
// clients send. A key must be 1 to MaxKeyLength printable ASCII
// characters.
func ParseKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(v); i++ {
			c := v[i]
			if c == '\\' {
				if i+1 >= len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
					return "", fmt.Errorf("key %q: bad escape at byte %d (a Structured Field string allows only \\\" and \\\\)", v, i)
				}
				i++
				b.WriteByte(v[i])
				continue
			}
			if c == '"' {
				break
			}
			b.WriteByte(c)
		}
		if i >= len(v) {
			return "", fmt.Errorf("key %q: unterminated string", v)
		}
		if i != len(v)-1 {
			return "", fmt.Errorf("key %q: unexpected text after the closing quote at byte %d", v, i+1)
		}
		v = b.String()
	}
	if v == "" {
		return "", fmt.Errorf("key is empty")
	}
	if len(v) > MaxKeyLength {
		return "", fmt.Errorf("key is %d bytes long; the limit is %d", len(v), MaxKeyLength)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", fmt.Errorf("key %q: byte %d is not printable ASCII", v, i)
		}
	}
	return v, nil
}

// problem is an RFC 9457 problem-details body.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func writeProblem(w http.ResponseWriter, status int, title, detail string) {
	b, _ := json.Marshal(problem{Type: ProblemType, Title: title, Status: status, Detail: detail})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Language", "en")
	h.Set("Link", "<"+ProblemType+`>; rel="describedby"; type="text/html"`)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// recorder buffers a handler's response, to store it before sending it.
type recorder struct {
	header http.Header
	// sent is the header as it was at WriteHeader: later changes are
	// ignored, as net/http ignores them.
	sent   http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: make(http.Header)} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
		r.sent = r.header.Clone()
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.body.Write(p)
}

func (r *recorder) sentHeader() http.Header {
	if r.sent == nil {
		return r.header
	}
	return r.sent
}

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *recorder) writeTo(w http.ResponseWriter) {
	maps.Copy(w.Header(), r.sentHeader())
	w.WriteHeader(r.statusCode())
	_, _ = w.Write(r.body.Bytes())
}
