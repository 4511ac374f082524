package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// Downstream modes (Options.Downstream).
const (
	// ModeBuiltin is the downstream that keeps the Idempotency-Key
	// contract itself, in memory (Downstream's own bookkeeping).
	ModeBuiltin = "builtin"
	// ModeMiddleware puts package idempotency, on a real journal, between
	// the fault script and the handler that makes the effect: the whole
	// system, agent harness and server middleware, is judged.
	ModeMiddleware = "middleware"
)

// mwRoute is the route the middleware protects; its pattern scopes keys.
const mwRoute = "POST /act"

// NewMiddlewareDownstream returns the downstream for plan whose
// Idempotency-Key bookkeeping is an idempotency.Middleware on store
// instead of its own. Each request of /act goes, in order, through
//
//   - the fault script's front (what stands before a server's idempotency
//     layer: a gateway, a rate limiter): the arrival is counted and
//     logged, and a 4xx refusal, or a 5xx refusal with Retry-After, is
//     answered here;
//   - the middleware, which decides (run, replay, 409, 422, 500
//     outcome-unknown) and records the response before it is sent;
//   - the handler, which waits the action's delay (the client is not
//     watched: a client that hung up still gets its effect), and either
//     commits the effect and answers 200, or, for a 5xx refusal without
//     Retry-After, answers that 5xx without acting (the middleware then
//     stores nothing and the next request runs again);
//
// and then back through the front, which does to the middleware's answer
// what the script says, as the network or a gateway would: loses it (the
// connection reset), answers a 5xx in its place, or sends it late.
//
// With o.HandlerFailAfter, a "fail-after" action is the handler's own
// instead: it commits the effect and answers the 5xx, which the
// middleware, unless o.StoreServerErrors, takes for "nothing committed"
// and does not store, so the next request runs the handler again. That
// breaks the middleware's documented precondition on purpose, to show what
// it costs. errLog receives what the middleware cannot tell a client.
func NewMiddlewareDownstream(plan *Plan, log *Log, store journal.Store, o ServerOptions, errLog io.Writer) (*Downstream, error) {
	d := NewDownstream(plan, log)
	d.handlerFails = o.HandlerFailAfter
	if o.Owner == "" {
		o.Owner = "agentcheck-downstream"
	}
	var mu sync.Mutex // errLog's writes
	opts := &idempotency.Options{
		StoreServerErrors: o.StoreServerErrors,
		Owner:             o.Owner,
		LeaseTTL:          o.LeaseTTL,
		ErrorLog: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(errLog, time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
		},
	}
	if o.Reconcile {
		opts.Reconcile, opts.Settle = d.reconcile, reconcileSettle
	}
	m, err := idempotency.New(store, opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(mwRoute, m.Handler(http.HandlerFunc(d.handle)))
	d.mw = mux
	return d, nil
}

// ServerOptions are the choices of ModeMiddleware beyond its store.
type ServerOptions struct {
	// HandlerFailAfter makes a fail-after action the handler's: it commits
	// the effect, then answers the 5xx through the middleware. False (the
	// default) makes it a gateway's, after the middleware has recorded the
	// handler's 200.
	HandlerFailAfter bool
	// StoreServerErrors is idempotency.Options.StoreServerErrors.
	StoreServerErrors bool
	// Owner names the server process in the journal's leases; empty
	// means "agentcheck-downstream". Each incarnation of a server that is
	// killed and restarted needs its own.
	Owner string
	// LeaseTTL is idempotency.Options.LeaseTTL: how long the key of a
	// request whose server died stays in flight. Zero means the
	// middleware's default (30 s).
	LeaseTTL time.Duration
	// Reconcile sets idempotency.Options.Reconcile: the middleware asks
	// the downstream's own record of effects by key (Downstream.reconcile)
	// what became of a request whose server died, with a Settle of
	// reconcileSettle.
	Reconcile bool
}

// reconcileSettle is the middleware's Settle with ServerOptions.Reconcile:
// how long after a run starts its effect may still land. The handler's
// effect lands in its own process, which a kill ends, and a live server
// renews its lease: a short window is true here.
const reconcileSettle = time.Second

// reconcile is the middleware's Options.Reconcile: the application looks
// its own record of effects up by the request's key. It answers happened,
// with the first effect's output, or did not happen; it is never unsure,
// since effects and this record are one.
func (d *Downstream) reconcile(r *http.Request, key string) downstream.Reconciliation {
	var b body
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	_ = json.Unmarshal(raw, &b)
	d.mu.Lock()
	out, ok := d.byKey[key]
	// Stamped under the lock that commit logs effects under: an effect
	// not seen here is later in the history.
	now := time.Now().UnixNano()
	d.mu.Unlock()
	e := Event{T: now, Ev: EvReconcile, Intent: b.Intent, P: b.P, Key: key, Output: out, Note: "did not happen"}
	if ok {
		e.Note = "happened"
		d.log.Add(e)
		return downstream.Happened(out)
	}
	d.log.Add(e)
	return downstream.DidNotHappen()
}

// mwCall carries a request's action from the front to the handler.
type mwCall struct {
	in   *Intent
	p    int
	a    Action
	base Event
	// ran and refused say what the handler did (it does nothing on a
	// replay or a refusal by the middleware).
	ran, refused bool
}

type mwCallKey struct{}

// actMiddleware is act for ModeMiddleware: the front of the fault script,
// the middleware, and the fault applied to the middleware's answer.
func (d *Downstream) actMiddleware(w http.ResponseWriter, r *http.Request, in *Intent, p int, raw []byte) {
	key := r.Header.Get("Idempotency-Key")
	base := Event{Ev: EvRequest, Intent: in.ID, P: p, Key: key, Attempt: r.Header.Get("X-Request-Id")}
	if key == "" {
		// An Unkeyed tool's key: the middleware honours it too.
		base.Key = r.Header.Get("X-Agentonce-Key")
	}
	d.mu.Lock()
	a, n := d.next(in)
	d.mu.Unlock()
	e := base
	e.Note = fmt.Sprintf("#%d %s", n, a)
	if key != "" {
		e.Note += " idempotency-key"
	}
	d.log.Add(e)
	if a.Do == ActRefuse && (a.Code < 500 || a.RetryAfter) {
		// Decided before the idempotency layer, as a gateway or a rate
		// limiter would: a retry refused with 417 though the key has a
		// stored response.
		time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
		d.respond(w, r, base, a.Code, a.RetryAfter, "refused before the middleware")
		return
	}
	c := &mwCall{in: in, p: p, a: a, base: base}
	rec := &recorder{header: http.Header{}}
	req := r.WithContext(context.WithValue(r.Context(), mwCallKey{}, c))
	req.Body = io.NopCloser(bytes.NewReader(raw))
	d.mw.ServeHTTP(rec, req)
	d.forward(w, r, c, rec)
}

// handle is the handler behind the middleware: it makes the effect.
func (d *Downstream) handle(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(mwCallKey{}).(*mwCall)
	if c == nil {
		http.Error(w, "no call", http.StatusInternalServerError)
		return
	}
	// The client is not watched (nor is it by the middleware, which runs
	// the handler on a context that a hang-up does not end).
	time.Sleep(time.Duration(c.a.DelayMS) * time.Millisecond)
	if c.a.Do == ActRefuse {
		// A 5xx that means "nothing was committed", as the middleware
		// expects of a handler (Options.StoreServerErrors is off).
		c.refused = true
		http.Error(w, "refused by the handler, nothing committed", c.a.Code)
		return
	}
	c.ran = true
	out := d.commit(c.in, c.p, c.base, nil)
	// The handler's work goes on after its effect (a second write, the
	// answer's rendering): a server killed meanwhile leaves an effect
	// with no recorded answer, which only the application can tell.
	time.Sleep(min(time.Duration(c.a.DelayMS)*time.Millisecond/5, 100*time.Millisecond))
	if c.a.Do == ActFailAfter && d.handlerFails {
		// Committed, then a 5xx: what the middleware's default forbids.
		http.Error(w, "failed after commit, by the handler", c.a.Code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// commit makes one effect of in's payload p and logs it; st, when set,
// stores its output as the builtin downstream's record of the key.
func (d *Downstream) commit(in *Intent, p int, base Event, st *stored) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	num := len(d.effects[in.ID]) + 1
	var out []byte
	if in.Kind == Idempotent {
		out, _ = json.Marshal(map[string]any{"intent": in.ID, "p": p, "put": true})
	} else {
		out, _ = json.Marshal(map[string]any{"intent": in.ID, "p": p, "effect": num, "attempt": base.Attempt})
	}
	d.effects[in.ID] = append(d.effects[in.ID], out)
	if _, ok := d.byKey[base.Key]; !ok && base.Key != "" {
		d.byKey[base.Key] = out
	}
	if st != nil {
		st.done, st.body = true, out
	}
	e := base
	e.Ev, e.Effect, e.Output = EvEffect, num, out
	d.log.Add(e)
	return out
}

// forward sends the middleware's answer as the script says: at once, late,
// replaced by a 5xx, or not at all.
func (d *Downstream) forward(w http.ResponseWriter, r *http.Request, c *mwCall, rec *recorder) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	what := fmt.Sprintf("middleware answered %d", status)
	switch {
	case rec.header.Get(idempotency.DefaultReplayedHeader) == "true":
		what += " replayed"
	case c.refused:
		what += " (the handler refused)"
	case c.ran && status >= 500:
		what += " (the handler failed after its effect)"
	case !c.ran && status != http.StatusOK:
		what += " without running the handler"
	}
	if t := problemType(rec); t != "" {
		what += " " + t
	}
	switch c.a.Do {
	case ActLose:
		e := c.base
		e.Ev, e.Note = EvResponse, what+"; lost: connection dropped"
		d.log.Add(e)
		reset(w)
		return
	case ActFailAfter:
		if !d.handlerFails {
			d.respond(w, r, c.base, c.a.Code, false, what+"; a gateway answered in its place")
			return
		}
	case ActLate:
		time.Sleep(time.Duration(c.a.AfterMS) * time.Millisecond)
	}
	e := c.base
	e.Ev, e.Code, e.Note = EvResponse, status, join(what, delivery(r))
	if status == http.StatusOK {
		e.Output = rec.body.Bytes()
	}
	d.log.Add(e)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write(rec.body.Bytes())
}

// problemType returns the last part of an RFC 9457 problem's type URI
// ("in-flight"), or "".
func problemType(rec *recorder) string {
	if rec.header.Get("Content-Type") != "application/problem+json" {
		return ""
	}
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(rec.body.Bytes(), &p)
	if i := bytes.LastIndexByte([]byte(p.Type), '#'); i >= 0 {
		return p.Type[i+1:]
	}
	return p.Type
}

// reset drops the connection unanswered: a reset, not a clean close.
func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// recorder is the ResponseWriter the middleware answers into, so that the
// front can apply the script's fault to the answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// readServerLog returns the lines of the middleware's log, at most 100 of
// them (the last says how many more there were).
func readServerLog(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if n := len(lines); n > 100 {
		lines = append(lines[:99], fmt.Sprintf("… and %d more lines in %s", n-99, path))
	}
	return lines
}

// serverErrLog opens the file the middleware's ErrorLog writes to.
func serverErrLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// ServerProcOptions are the inputs of a server process (agentcheck
// server): the middleware downstream run apart from the checker, so that
// the checker can kill it with SIGKILL.
type ServerProcOptions struct {
	// Plan is the path of the plan file.
	Plan string
	// Journal is the middleware's journal location.
	Journal string
	// Log is the downstream's history file, appended to; a restarted
	// server reads it back to resume the scripts and the effects.
	Log string
	// Addr is the loopback address to listen on, the same for every
	// incarnation.
	Addr string
	// ErrLog is the file the middleware's ErrorLog appends to.
	ErrLog string
	Server ServerOptions
}

// RunServer is the body of a server process: it resumes the downstream's
// state from its log, opens the journal, and serves until it is killed.
func RunServer(ctx context.Context, o ServerProcOptions) error {
	plan, err := ReadPlan(o.Plan)
	if err != nil {
		return err
	}
	past, err := ReadHistory(o.Log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	log, err := OpenLog(o.Log, "downstream")
	if err != nil {
		return err
	}
	defer log.Close()
	var jopts *journal.Options
	if _, ok := journal.Scheme(o.Journal); !ok {
		// The previous incarnation's lock goes with its death.
		jopts = &journal.Options{StoreOptions: &bolt.Options{LockTimeout: 20 * time.Second}}
	}
	store, err := journal.Open(ctx, o.Journal, jopts)
	if err != nil {
		return fmt.Errorf("server journal: %w", err)
	}
	defer store.Close()
	errLog, err := serverErrLog(o.ErrLog)
	if err != nil {
		return err
	}
	defer errLog.Close()
	d, err := NewMiddlewareDownstream(plan, log, store, o.Server, errLog)
	if err != nil {
		return err
	}
	d.resume(past)
	var ln net.Listener
	for try := 0; ; try++ {
		if ln, err = net.Listen("tcp", o.Addr); err == nil || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// resume takes back what an earlier incarnation did: how many requests of
// each intent arrived (where its script stands) and the effects.
func (d *Downstream) resume(past []Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range past {
		switch e.Ev {
		case EvRequest:
			d.arrived[e.Intent]++
		case EvEffect:
			d.effects[e.Intent] = append(d.effects[e.Intent], e.Output)
			if _, ok := d.byKey[e.Key]; !ok && e.Key != "" {
				d.byKey[e.Key] = e.Output
			}
		}
	}
}
