package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // plain paths: bbolt files, the default store, as for the harness
	"github.com/agentonce/agentonce/keyderive"
)

// Error classes the middleware writes into journal records.
const (
	// ClassReleased marks a record settled failed because the handler
	// answered 5xx (and Options.StoreServerErrors is off) or, under InTx,
	// panicked: nothing was committed, and the next request runs again.
	ClassReleased = "released"
	// ClassPanic marks a record whose handler panicked (outcome unknown).
	ClassPanic = "panic"
	// ClassCrashed marks a record whose process stopped mid-request: the
	// next request with its key found it pending with an expired lease.
	ClassCrashed = "unknown"
	// ClassTooLarge marks a record whose response outgrew
	// Options.MaxResponseBytes (outcome unknown: the handler ran).
	ClassTooLarge = "response-too-large"
)

// Middleware makes the handlers it wraps answer each idempotency key once,
// on a journal.Store. It is safe for concurrent use; one Middleware may
// wrap many handlers.
type Middleware struct {
	store       journal.Store
	ns          uuid.UUID
	o           Options // defaults filled in
	normalizers map[string]*keyderive.Normalizer
	inTx        effectCompleter // set when o.InTx
	replayed    string          // o.ReplayedHeader in canonical form
	replayedB   []byte          // replayed, for a ReplayWriter
	// readFirst: every request is answered by a Get before Begin when it
	// can be, on a store whose Begin costs more than a read on a settled
	// record (see replayReads). Otherwise only a request for a key in seen
	// is: nil when readFirst.
	readFirst bool
	seen      *seenKeys
	// answers keeps settled records to answer retries from memory.
	answers answers
}

// seenKeys is a lossy table of the journal keys this Middleware began or
// was answered about: a request for one is likely a retry, answered by a
// Get before Begin (1 round trip, where Begin's answer to a replay costs
// more than a Get even on stores that answer it by a read), and a request
// for any other likely a new key, sent straight to Begin (no read before
// it). The table only chooses the path and both answer the same, so a key
// forgotten (its slot taken by another) or mistaken (another key's tag)
// costs at most a round trip, never an answer.
type seenKeys [seenSlots]atomic.Uint64

// seenSlots is the table's size: 32 KiB a Middleware.
const seenSlots = 1 << 12

// slot is k's place in the table and the tag kept there, never zero (the
// empty slot's). A journal key is a UUIDv5, so its bytes are a hash's.
func slot(k uuid.UUID) (int, uint64) {
	return int(binary.BigEndian.Uint16(k[:2])) & (seenSlots - 1), binary.BigEndian.Uint64(k[8:]) | 1
}

func (s *seenKeys) has(k uuid.UUID) bool {
	i, t := slot(k)
	return s[i].Load() == t
}

func (s *seenKeys) add(k uuid.UUID) {
	if i, t := slot(k); s[i].Load() != t {
		s[i].Store(t)
	}
}

// beginReplayer is a store whose Begin answers a settled record by one
// read-only round trip (journal/redis): a Get before every Begin would add
// a round trip to every new key, and save a replay only the difference
// between a Get and that Begin.
type beginReplayer interface {
	BeginReplays() bool
}

// localReader is a store whose reads are local (bbolt, memory): its
// Begin on a settled record is a local read too.
type localReader interface {
	LocalReads() bool
}

// replayReads reports whether the middleware reads every key's record
// before Begin on store. Begin alone answers every request, a replay
// included (journal.Store: "Begin on the replay path writes nothing"), so
// a read before it is a read more for every new key. It stays for every
// request on a store that does not say that its Begin answers a replay by
// a read: journal/postgres, whose Begin on a settled record is a statement
// costing about 2.4 Gets, and a wrapper that does not forward the
// capabilities. On the others only a key seen before is read first.
func replayReads(store journal.Store) bool {
	if b, ok := store.(beginReplayer); ok && b.BeginReplays() {
		return false
	}
	if l, ok := store.(localReader); ok && l.LocalReads() {
		return false
	}
	return true
}

// effectCompleter is the capability of a store that runs an effect in the
// transaction recording its outcome (journal/postgres and journal/bolt).
type effectCompleter interface {
	CompleteWith(ctx context.Context, key uuid.UUID, token uint64,
		effect func(ctx context.Context) ([]byte, error)) (journal.Record, error)
}

// New returns a Middleware on store. It fails when a Volatile path is
// invalid or InTx is asked of a store without the capability.
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
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxStoredBytes <= 0 {
		o.MaxStoredBytes = DefaultMaxStoredBytes
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.ReplayedHeader == "" {
		o.ReplayedHeader = DefaultReplayedHeader
	}
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

// Handler wraps next. Register the result on a ServeMux (mux.Handle(
// "POST /v1/charges", m.Handler(charge))) so that the route pattern is
// known: wrapping the mux itself scopes keys by path instead.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next, nil, true) })
}

// Serve answers r as m.Handler(next) does, for a server that is not
// net/http's and holds the request's body in memory already (Fiber's
// fasthttp, for one): body is r's body, which the middleware neither reads
// from r.Body nor copies (it is not kept after Serve returns), and
// MaxBodyBytes still caps it. When the middleware protects r, next gets
// it with a Body that reads body; when r passes through (a safe method, no
// key), next gets r as it is. r.Pattern, when set, is the route that
// scopes the key, as a ServeMux would set it. A replay is handed to w's
// WriteReplay when w is a ReplayWriter.
func (m *Middleware) Serve(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	m.serve(w, r, next, body, false)
}

// call is one protected request on its way through the journal.
type call struct {
	key    string // the client's key
	tenant string
	tool   string // method and route
	jkey   uuid.UUID
	body   bodyReader // the request's body, read once, for the handler
}

// bodyReader is the body the handler reads: the bytes serve read.
type bodyReader struct{ bytes.Reader }

// Close does nothing: the bytes are in memory.
func (*bodyReader) Close() error { return nil }

// serve answers r; read says that its body is to be read from r.Body,
// else it is body.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, read bool) {
	if safeMethod(r.Method) && m.o.Key == nil {
		next.ServeHTTP(w, r)
		return
	}
	c := &call{}
	var err error
	if m.o.Key == nil {
		var ok bool
		c.key, ok, err = requestKey(r)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, ProblemKeyInvalid, problem{Detail: err.Error()}, 0)
			return
		}
		if !ok {
			if m.o.Require != nil && m.o.Require(r) {
				writeProblem(w, http.StatusBadRequest, ProblemKeyRequired,
					problem{Detail: r.Method + " " + route(r) + " requires an Idempotency-Key header"}, 0)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
	}
	if read {
		body, err = readBody(r, m.o.MaxBodyBytes)
	} else if int64(len(body)) > m.o.MaxBodyBytes {
		err = errBodyTooLarge
	}
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			writeProblem(w, http.StatusRequestEntityTooLarge, ProblemBodyTooLarge,
				problem{Detail: fmt.Sprintf("the body exceeds %d bytes", m.o.MaxBodyBytes)}, 0)
		} else {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
		return
	}
	c.body.Reset(body)
	r.Body = &c.body
	if m.o.Key != nil {
		if c.key, err = m.o.Key(r, body); err == nil && (c.key == "" || len(c.key) > MaxKeyLength) {
			err = fmt.Errorf("the event id must be 1 to %d bytes, got %d", MaxKeyLength, len(c.key))
		}
		if err != nil {
			status, kind := http.StatusBadRequest, ProblemKeyInvalid
			if errors.Is(err, ErrSignature) {
				status, kind = http.StatusUnauthorized, ProblemUnauthenticated
			}
			writeProblem(w, status, kind, problem{Detail: err.Error()}, 0)
			return
		}
	}
	if m.o.Tenant != nil {
		if c.tenant, err = m.o.Tenant(r); err != nil {
			writeProblem(w, http.StatusUnauthorized, ProblemUnauthenticated, problem{Detail: err.Error()}, 0)
			return
		}
	}
	var step string
	step, c.tool = stepKey(r.Method, route(r), c.key)
	c.jkey = keyderive.ExplicitKey(m.ns, c.tenant, step)
	bufp := inputPool.Get().(*[]byte)
	input, at, kind := m.fingerprintInput((*bufp)[:0], r, body)
	req := journal.BeginRequest{
		Key:         c.jkey,
		Intent:      keyderive.Intent{Tenant: c.tenant, Session: c.key, Tool: c.tool},
		Fingerprint: fingerprint(input),
		Effect:      journal.Keyed,
		Owner:       m.o.Owner,
		AttemptID:   headerValue(r.Header, RequestIDHeader),
		LeaseTTL:    m.o.LeaseTTL,
		RecordTTL:   m.o.TTL,
		// The write-ahead: a crash mid-handler must leave the record. Under
		// InTx it need not reach the disk first: the handler's writes
		// commit only with the outcome, which makes the record durable
		// too, so a record lost in a crash lost them with it, and a
		// process killed mid-handler still leaves it (the bbolt store's
		// pending log, PostgreSQL's server), to be run again.
		Durable: m.inTx == nil,
		Guard:   journal.GuardOff,
	}
	// Begin answers a replay by a read (it writes nothing on a settled
	// record), so a new key is one Begin, not a Get and a Begin. A key this
	// Middleware has seen, likely a retry, is answered by a Get first, as
	// is every key on a store whose Begin costs more than a read
	// (readFirst).
	// ans is the settled record that answers the request, if one does:
	// kept in memory, or read first.
	ans := m.answers.get(c.jkey, req.Fingerprint, time.Now())
	if ans == nil && (m.readFirst || m.seen.has(c.jkey)) {
		if rec, ok := m.replayable(r.Context(), &req); ok {
			m.answers.put(&rec)
			ans = &rec
		}
	}
	if ans == nil && kind == kindJSON && len(input)-at <= m.o.MaxStoredBytes {
		// Its own copy: the store may keep the record it writes.
		req.Input = bytes.Clone(input[at:])
	}
	if cap(input) <= maxPooledInput {
		*bufp = input[:0]
		inputPool.Put(bufp)
	}
	if ans != nil {
		m.answer(w, c, ans)
		return
	}
	m.decide(w, r, next, c, &req)
}

// replayable reads req's record and reports whether it answers req
// (answersRequest). Anything else goes through Begin, which decides on the
// store's clock: retakable is asked of Begin's record in decide, and
// expiry is Begin's own.
func (m *Middleware) replayable(ctx context.Context, req *journal.BeginRequest) (journal.Record, bool) {
	rec, err := m.store.Get(ctx, req.Key)
	return rec, err == nil && answersRequest(&rec, req.Fingerprint, time.Now())
}

// decide carries out what Begin decided for the request; with Options.Wait
// it waits for a key in flight to settle.
func (m *Middleware) decide(w http.ResponseWriter, r *http.Request, next http.Handler, c *call, req *journal.BeginRequest) {
	ctx := r.Context()
	if req.AttemptID == "" {
		req.AttemptID = uuid.NewString()
	}
	deadline := time.Now().Add(m.o.Wait)
	pause := 5 * time.Millisecond
	retaken := false // set by req.Retake during the Begin that follows
	for {
		retaken = false
		res, err := m.store.Begin(ctx, *req)
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, ProblemJournal,
				problem{Detail: "the request was not run: " + err.Error(), Key: c.key}, m.o.RetryAfter)
			return
		}
		if m.seen != nil && res.Outcome != journal.Mismatch && res.Outcome != journal.Guarded {
			// Its next request is likely a retry: a Get answers it. A
			// mismatch's is not answered by the Get's record.
			m.seen.add(c.jkey)
		}
		switch res.Outcome {
		case journal.Started:
			m.run(w, r, next, c, res.Token)
			return
		case journal.TakenOver:
			if retaken || m.inTx != nil { // under InTx a dead process's writes were rolled back
				m.run(w, r, next, c, res.Token)
				return
			}
			m.abandon(ctx, c, res.Token)
			m.answerUnknown(w, c, "the server stopped while handling the first request with this key; whether it took effect is unknown")
			return
		case journal.Answered:
			if req.Retake == nil && retakable(&res.Record) {
				// Begin again, asking for the record: rare, so that the
				// common replay does not pay for Retake's copy.
				req.Retake = func(rec *journal.Record) bool {
					ok := retakable(rec)
					retaken = retaken || ok
					return ok
				}
				continue
			}
			m.answers.put(&res.Record)
			m.answer(w, c, &res.Record)
			return
		case journal.Mismatch, journal.Guarded:
			writeProblem(w, http.StatusUnprocessableEntity, ProblemKeyReused, problem{
				Detail: "this key was first used with a different request body, path or query", Key: c.key,
				JournalKey: c.jkey.String()}, 0)
			return
		}
		// Held: the first request is running (or its process may still be).
		if m.o.Wait <= 0 || !time.Now().Add(pause).Before(deadline) {
			writeProblem(w, http.StatusConflict, ProblemInFlight, problem{
				Detail: "retry after the first request has been answered", Key: c.key}, m.o.RetryAfter)
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// retakable reports whether a settled record is to run again: settled
// failed with nothing committed (released, or an operator's verdict that
// the effect did not happen).
func retakable(rec *journal.Record) bool {
	return rec.State == journal.StateFailed && (rec.ErrorClass == ClassReleased || rec.Resolution != nil)
}

// abandon settles a record whose owner died mid-request as unknown: it is
// what an operator must look at (agentctl ls --state unknown).
func (m *Middleware) abandon(ctx context.Context, c *call, token uint64) {
	_, err := m.store.Complete(context.WithoutCancel(ctx), journal.Completion{Key: c.jkey, Token: token,
		State: journal.StateUnknown, ErrorClass: ClassCrashed,
		ErrorMessage: "the server stopped while the handler ran (its lease expired); resolve with agentctl after checking the effect"})
	if err != nil {
		m.o.ErrorLog("idempotency: key %s (%s): recording an unknown outcome: %v", c.jkey, c.tool, err)
	}
}

func (m *Middleware) answerUnknown(w http.ResponseWriter, c *call, detail string) {
	writeProblem(w, http.StatusInternalServerError, ProblemOutcomeUnknown, problem{
		Detail: detail + "; an operator resolves it with: agentctl resolve " + c.jkey.String(),
		Key:    c.key, JournalKey: c.jkey.String()}, 0)
}

// answer replies from a settled record.
func (m *Middleware) answer(w http.ResponseWriter, c *call, rec *journal.Record) {
	switch rec.State {
	case journal.StateSucceeded:
		var e envelope
		err := parseEnvelope(rec.Output, &e)
		if errors.Is(err, errNotEnvelope) {
			// An operator's verdict with an output of their own: send it.
			operatorResponse(rec.Output).write(w, m.o.ReplayedHeader)
			return
		}
		if err != nil {
			m.o.ErrorLog("idempotency: key %s (%s): %v", c.jkey, c.tool, err)
			writeProblem(w, http.StatusInternalServerError, ProblemBodyUnavailable,
				problem{Detail: err.Error(), Key: c.key, JournalKey: c.jkey.String()}, 0)
			return
		}
		if e.body == nil && e.sum != emptySum {
			// Kept elsewhere: a blob, or only its hash.
			b, err := m.fetchBlob(c, &e)
			if err != nil {
				writeProblem(w, http.StatusInternalServerError, ProblemBodyUnavailable,
					problem{Detail: err.Error(), Key: c.key, JournalKey: c.jkey.String()}, 0)
				return
			}
			e.body = b
		}
		if rw, ok := w.(ReplayWriter); ok {
			rw.WriteReplay(Replay{Status: e.status, Body: e.body, header: e.header, sorted: e.sorted, replayed: m.replayedB})
			return
		}
		e.write(w, m.replayed, e.body)
	case journal.StateUnknown:
		m.answerUnknown(w, c, "the first request with this key ended without a recorded answer ("+rec.ErrorMessage+")")
	default: // failed or suppressed and not to be run again
		writeProblem(w, http.StatusInternalServerError, ProblemFailed, problem{
			Detail: rec.ErrorMessage, Key: c.key, JournalKey: c.jkey.String()}, 0)
	}
}

// fetchBlob returns the body e's record keeps in the blob store.
func (m *Middleware) fetchBlob(c *call, e *envelope) ([]byte, error) {
	if m.o.Blobs == nil || len(e.blob) == 0 {
		return nil, errors.New("the body was larger than MaxStoredBytes and no BlobStore kept it")
	}
	b, err := m.o.Blobs.Get(context.Background(), string(e.blob), int64(m.o.MaxResponseBytes))
	if err == nil && sha256.Sum256(b) != e.sum {
		err = fmt.Errorf("blob %s does not match the stored sha256", e.blob)
	}
	return b, err
}

// emptySum is the SHA-256 of an empty body.
var emptySum = sha256.Sum256(nil)

// operatorResponse is the answer for a record an operator settled as
// succeeded with an output that is not a stored response: 200 with it.
func operatorResponse(out []byte) *response {
	ct := "application/octet-stream"
	if len(out) > 0 && json.Valid(out) {
		ct = "application/json"
	}
	return &response{Status: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: out}
}
