package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// Error classes the middleware writes into journal records.
const (
	// ClassReleased marks a 5xx not stored, or a panic under InTx: nothing
	// was committed, and the next request runs again.
	ClassReleased = reissue.ClassReleased
	// ClassPanic marks a record whose handler panicked (outcome unknown).
	ClassPanic = "panic"
	// ClassCrashed marks a record whose process stopped mid-request.
	ClassCrashed = "unknown"
	// ClassTooLarge marks a record whose response outgrew
	// Options.MaxResponseBytes (outcome unknown).
	ClassTooLarge = "response-too-large"
)

// Middleware makes the handlers it wraps answer each idempotency key once.
// It is safe for concurrent use.
type Middleware struct {
	store       journal.Store
	ns          uuid.UUID
	o           Options // defaults filled in
	normalizers map[string]*keyderive.Normalizer
	inTx        effectCompleter // set when o.InTx
	settle      time.Duration   // o.Settle when o.Reconcile is set, else none
	replayed    string          // o.ReplayedHeader in canonical form
	replayedB   []byte          // replayed, for a ReplayWriter
	// readFirst: every request is tried by a Get before Begin (see
	// replayReads); otherwise only a key in seen (nil when readFirst).
	readFirst bool
	seen      *seenKeys
	answers   answers // settled records, to answer retries from memory
	// routed and unrouted: a request came with a route pattern (the
	// Handlers are mounted on a mux), or without one (the mux is wrapped):
	// what a Lookup without a mux may take a path for.
	routed, unrouted atomic.Bool
}

// effectCompleter is a store that runs an effect in its outcome's transaction.
type effectCompleter interface {
	CompleteWith(ctx context.Context, key uuid.UUID, token uint64,
		effect func(ctx context.Context) ([]byte, error)) (journal.Record, error)
}

// New returns a Middleware on store, or an error naming a wrong option.
func New(store journal.Store, opts *Options) (*Middleware, error) {
	if store == nil {
		return nil, errors.New("idempotency.New: nil store")
	}
	m := &Middleware{store: store, ns: store.Namespace(), normalizers: map[string]*keyderive.Normalizer{},
		readFirst: replayReads(store)}
	if !m.readFirst {
		m.seen = new(seenKeys)
	}
	if opts != nil {
		m.o = *opts
	}
	o := &m.o
	orDefault(&o.RetryAfter, DefaultRetryAfter)
	orDefault(&o.TTL, DefaultTTL)
	orDefault(&o.LeaseTTL, DefaultLeaseTTL)
	orDefault(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	orDefault(&o.MaxStoredBytes, DefaultMaxStoredBytes)
	orDefault(&o.MaxResponseBytes, DefaultMaxResponseBytes)
	if o.TTL < o.LeaseTTL {
		return nil, fmt.Errorf("idempotency.New: TTL %v is shorter than LeaseTTL %v: a key would be new again while its first request may still run", o.TTL, o.LeaseTTL)
	}
	for pattern, n := range o.Approvals {
		if method, _, _ := strings.Cut(pattern, " "); n < 0 || safeMethod(method) {
			return nil, fmt.Errorf("idempotency.New: Approvals[%q] is %d: want 0 or more, on a method other than GET, HEAD, OPTIONS and TRACE (they pass through)", pattern, n)
		}
		if n > 0 && len(o.Volatile[pattern]) > 0 {
			return nil, fmt.Errorf("idempotency.New: Approvals and Volatile both name %q: an approval names the body's fingerprint, which leaves %v out, so it would approve bodies it never showed", pattern, o.Volatile[pattern])
		}
	}
	if o.Reconcile != nil {
		if o.InTx {
			return nil, errors.New("idempotency.New: Reconcile with InTx: under InTx no outcome is unknown, there is nothing to reconcile")
		}
		orDefault(&o.Settle, DefaultSettle)
		m.settle = o.Settle
	}
	o.ReplayedHeader = cmp.Or(o.ReplayedHeader, DefaultReplayedHeader)
	if o.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if o.ErrorLog == nil {
		o.ErrorLog = log.Printf
	}
	m.replayed = http.CanonicalHeaderKey(o.ReplayedHeader)
	m.replayedB = []byte(m.replayed)
	o.StoredHeaders = append(append([]string(nil), keptHeaders...), o.StoredHeaders...)
	for pattern, paths := range o.Volatile {
		n, err := keyderive.NewNormalizer(nil, paths)
		if err != nil {
			return nil, fmt.Errorf("idempotency.New: volatile fields of %q: %w", pattern, err)
		}
		m.normalizers[pattern] = n
	}
	if o.InTx {
		c, ok := store.(effectCompleter)
		if !ok {
			return nil, fmt.Errorf("idempotency.New: InTx needs a store that runs an effect in its completion's transaction (journal/postgres, journal/bolt); %T does not", store)
		}
		m.inTx = c
	}
	return m, nil
}

// orDefault sets *v to d when it is not positive.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Handler wraps next; register it on a ServeMux, whose pattern scopes keys.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return protected{m, next}
}

// protected is a handler m protects; Lookup knows its routes by it.
type protected struct {
	m    *Middleware
	next http.Handler
}

func (p protected) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.m.serve(w, r, p.next, nil, true)
}

// Serve answers r as m.Handler(next) does, for a server that is not
// net/http's and holds the body in memory (Fiber's fasthttp): body is r's
// body, neither copied nor kept. A replay goes to w's WriteReplay when w
// is a ReplayWriter.
func (m *Middleware) Serve(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	m.serve(w, r, next, body, false)
}

// call is one protected request on its way through the journal.
type call struct {
	key    string // the client's key
	tenant string
	tool   string // method and route
	jkey   uuid.UUID
	body   bodyReader           // the request's body, read once, for the handler
	req    journal.BeginRequest // parse fills it, lookUp adds the fingerprint and input
}

// bodyReader is the body the handler reads: the bytes serve read.
type bodyReader struct{ bytes.Reader }

// Close does nothing: the bytes are in memory.
func (*bodyReader) Close() error { return nil }

// serve answers r: parse, look up, else Begin. read says r.Body is unread.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, read bool) {
	c, body := m.parse(w, r, next, body, read)
	if c == nil {
		return
	}
	if rec := m.lookUp(r, c, body); rec != nil {
		m.answer(w, c, rec)
		return
	}
	m.decide(w, r, next, c)
}
