package check

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Downstream is the loopback service the plan's tools call. For each
// intent it follows the intent's script, request by request in arrival
// order. It keeps the Idempotency-Key contract as a real server does, by
// the key the request carries and nothing else: the first request with a
// key acts and its response is stored; a later one with that key gets the
// stored response replayed, 409 while the first is still running, 422 when
// its payload differs. A request without the header acts every time. It
// never watches the client: a request whose client hung up still commits
// its effect. Every request, effect and response goes into its Log. It is
// safe for concurrent use.
type Downstream struct {
	intents map[string]*Intent
	log     *Log
	running atomic.Int64 // handlers in progress (a WaitGroup may not be Added to while waited on from zero)

	mu      sync.Mutex         // guards the maps below
	arrived map[string]int     // requests per intent
	keyed   map[string]*stored // by Idempotency-Key: the stored response
	effects map[string][]json.RawMessage
	// byKey holds each key's first effect, as the application's own
	// database would (ModeMiddleware's Reconcile reads it).
	byKey map[string]json.RawMessage

	// mw, in ModeMiddleware, is the idempotency middleware (on a ServeMux)
	// that replaces the bookkeeping by key (see NewMiddlewareDownstream).
	mw http.Handler
	// handlerFails makes a fail-after action the handler's (ServerOptions).
	handlerFails bool
}

// stored is the idempotency record of one Idempotency-Key: the payload
// (intent and index) that first came with it, and its response.
type stored struct {
	intent string
	p      int
	done   bool
	body   json.RawMessage
}

// NewDownstream returns the downstream for plan, recording into log.
func NewDownstream(plan *Plan, log *Log) *Downstream {
	d := &Downstream{intents: make(map[string]*Intent), log: log,
		arrived: make(map[string]int), keyed: make(map[string]*stored), effects: make(map[string][]json.RawMessage),
		byKey: make(map[string]json.RawMessage)}
	for i := range plan.Intents {
		d.intents[plan.Intents[i].ID] = &plan.Intents[i]
	}
	return d
}

// Effects returns how many effects the downstream committed in all.
func (d *Downstream) Effects() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, e := range d.effects {
		n += len(e)
	}
	return n
}

// Wait waits up to timeout for the requests in progress to finish acting,
// and reports whether they did.
func (d *Downstream) Wait(timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); d.running.Load() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// body is what a tool sends: its input.
type body struct {
	Intent string `json:"intent"`
	P      int    `json:"p"`
}

// ServeHTTP implements http.Handler: POST /act acts, GET /read reads (the
// ReadOnly tool), GET /effects?intent= tells a Reconcile hook the first
// effect of an intent (404 if none).
func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.running.Add(1)
	defer d.running.Add(-1)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/act":
		var b body
		raw, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(raw, &b)
		}
		in := d.intents[b.Intent]
		if err != nil || in == nil {
			http.Error(w, fmt.Sprintf("no such intent %q (%v)", b.Intent, err), http.StatusBadRequest)
			return
		}
		if d.mw != nil {
			d.actMiddleware(w, r, in, b.P, raw)
			return
		}
		d.act(w, r, in, b.P)
	case r.Method == http.MethodGet && r.URL.Path == "/read":
		p, _ := strconv.Atoi(r.URL.Query().Get("p"))
		in := d.intents[r.URL.Query().Get("intent")]
		if in == nil {
			http.Error(w, "no such intent", http.StatusBadRequest)
			return
		}
		d.read(w, r, in, p)
	case r.Method == http.MethodGet && r.URL.Path == "/running":
		// How many requests are in progress besides this one (a server
		// process's Wait, asked by the runner).
		fmt.Fprint(w, d.running.Load()-1)
	case r.Method == http.MethodGet && r.URL.Path == "/effects":
		d.mu.Lock()
		effects := d.effects[r.URL.Query().Get("intent")]
		d.mu.Unlock()
		if len(effects) == 0 {
			http.Error(w, "no effect", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(effects[0])
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// next counts a request of in and returns its action.
func (d *Downstream) next(in *Intent) (Action, int) {
	d.arrived[in.ID]++
	n := d.arrived[in.ID]
	if n <= len(in.Script) {
		return in.Script[n-1], n
	}
	return DefaultAction, n
}

func (d *Downstream) act(w http.ResponseWriter, r *http.Request, in *Intent, p int) {
	key := r.Header.Get("Idempotency-Key")
	base := Event{Ev: EvRequest, Intent: in.ID, P: p, Key: key, Attempt: r.Header.Get("X-Request-Id")}
	if key == "" {
		// An Unkeyed tool's key travels in a header a server ignores.
		base.Key = r.Header.Get("X-Agentonce-Key")
	}
	d.mu.Lock()
	a, n := d.next(in)
	e := base
	e.Note = fmt.Sprintf("#%d %s", n, a)
	if key != "" {
		e.Note += " idempotency-key"
	}
	d.log.Add(e)
	var st *stored
	if key != "" && a.Do != ActRefuse {
		// A refusal is the downstream's own decision, taken before its
		// idempotency layer (a retry refused with 417 even though the key
		// has a stored response).
		if prev := d.keyed[key]; prev != nil {
			mismatch, running, stored := prev.intent != in.ID || prev.p != p, !prev.done, prev.body
			d.mu.Unlock()
			switch {
			case mismatch:
				d.respond(w, r, base, http.StatusUnprocessableEntity, false, "key reused with another payload")
			case running:
				d.respond(w, r, base, http.StatusConflict, false, "a request with this key is in progress")
			default:
				time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
				d.deliver(w, r, base, a, stored, "replayed")
			}
			return
		}
		st = &stored{intent: in.ID, p: p}
		d.keyed[key] = st
	}
	d.mu.Unlock()

	// The client is not watched: a client that hung up gets its effect.
	time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
	if a.Do == ActRefuse {
		d.respond(w, r, base, a.Code, a.RetryAfter, "refused")
		return
	}
	out := d.commit(in, p, base, st)
	d.deliver(w, r, base, a, out, "")
}

func (d *Downstream) read(w http.ResponseWriter, r *http.Request, in *Intent, p int) {
	base := Event{Ev: EvRequest, Intent: in.ID, P: p, Attempt: r.Header.Get("X-Request-Id")}
	d.mu.Lock()
	a, n := d.next(in)
	d.mu.Unlock()
	e := base
	e.Note = fmt.Sprintf("#%d %s (read)", n, a)
	d.log.Add(e)
	time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
	if a.Do == ActRefuse {
		d.respond(w, r, base, a.Code, a.RetryAfter, "refused")
		return
	}
	out, _ := json.Marshal(map[string]any{"intent": in.ID, "p": p, "read": true})
	d.deliver(w, r, base, a, out, "")
}

// deliver answers a request that acted (or replays one that had) as the
// action says: at once, late, as a 5xx, or not at all.
func (d *Downstream) deliver(w http.ResponseWriter, r *http.Request, base Event, a Action, out []byte, note string) {
	switch a.Do {
	case ActLose:
		e := base
		e.Ev, e.Note = EvResponse, join(note, "lost: connection dropped after commit")
		d.log.Add(e)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not a clean close
				}
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case ActFailAfter:
		d.respond(w, r, base, a.Code, false, join(note, "failed after commit"))
		return
	case ActLate:
		time.Sleep(time.Duration(a.AfterMS) * time.Millisecond)
	}
	e := base
	e.Ev, e.Code, e.Output = EvResponse, http.StatusOK, out
	e.Note = join(note, delivery(r))
	d.log.Add(e)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// respond sends a status without a result.
func (d *Downstream) respond(w http.ResponseWriter, r *http.Request, base Event, code int, retryAfter bool, note string) {
	e := base
	e.Ev, e.Code, e.Note = EvResponse, code, join(note, delivery(r))
	d.log.Add(e)
	if retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, note, code)
}

// delivery says whether the client was still there to read the answer.
func delivery(r *http.Request) string {
	if r.Context().Err() != nil {
		return "client gone"
	}
	return "delivered"
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Serve runs d on a loopback listener and returns its URL and a function
// that closes the server.
func Serve(d *Downstream) (url string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("downstream: %w", err)
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
