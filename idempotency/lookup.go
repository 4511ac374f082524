package idempotency

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// LookupHeader says in a lookup's answer what became of the key.
const LookupHeader = "Agentonce-Lookup"

// Lookup returns a handler that tells a client what became of its request
// with a key (downstream.ServerReconcile asks it): a GET carrying the key,
// and the method and path in the query (?method=POST&path=/v1/charges),
// which mux routes to one of m's Handlers (nil when m wraps the mux: keys
// scoped by path; refused once m has served a request routed by pattern,
// and "unknown", never "not-run", before it has served one). See
// docs/server.md, "Lookup".
func (m *Middleware) Lookup(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, status, err := m.lookupCall(r, mux)
		if err != nil {
			writeProblem(w, status, map[int]string{400: ProblemLookupInvalid, 401: ProblemUnauthenticated}[status], problem{Detail: err.Error()}, 0)
			return
		}
		rec, err := m.store.Get(r.Context(), c.jkey)
		p := problem{Key: c.key, JournalKey: c.jkey.String(), Detail: "the first request with this key is " + rec.State.String() + ": " + rec.ErrorMessage}
		verdict, status, kind := "unknown", http.StatusInternalServerError, ProblemOutcomeUnknown
		switch {
		case errors.Is(err, journal.ErrNotFound) && mux == nil && !m.unrouted.Load():
			// Not yet known whether a path or a pattern keys the requests.
			p.Detail = "this server has served no request since it started, so it cannot tell how its requests are keyed; ask again"
		case errors.Is(err, journal.ErrNotFound):
			verdict, status, kind, p.Detail = "not-run", http.StatusNotFound, ProblemNotRun, "no request with this key is recorded"
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, ProblemJournal, problem{Detail: err.Error(), Key: c.key}, m.o.RetryAfter)
			return
		case rec.State == journal.StateSucceeded:
			w.Header().Set(LookupHeader, "succeeded")
			m.answer(w, c, &rec)
			return
		case rec.State == journal.StateFailed && (rec.ErrorClass == ClassReleased || rec.Resolution != nil || reissue.LastAttemptNotExecuted(&rec)):
			verdict, status, kind = "not-run", http.StatusNotFound, ProblemNotRun
		case rec.State == journal.StatePending:
			verdict, status, kind = "in-flight", http.StatusConflict, ProblemInFlight
		}
		w.Header().Set(LookupHeader, verdict)
		w.Header().Set("Cache-Control", "no-store") // a verdict but "succeeded" may change
		writeProblem(w, status, kind, p, 0)
	})
}

// lookupCall reads a lookup into a call, or the status and error to answer.
func (m *Middleware) lookupCall(r *http.Request, mux *http.ServeMux) (*call, int, error) {
	c := &call{}
	var err error
	if m.o.Tenant != nil {
		if c.tenant, err = m.o.Tenant(r); err != nil {
			return nil, http.StatusUnauthorized, err
		}
	}
	var ok bool
	if c.key, ok, err = requestKey(r); err == nil && !ok {
		err = errors.New("a lookup carries the key in " + KeyHeader + " or " + AgentonceKeyHeader)
	}
	q := r.URL.Query()
	method, path := q.Get("method"), q.Get("path")
	if err == nil && (method == "" || method != strings.ToUpper(method) || strings.ContainsAny(method, " \t\n/") ||
		!strings.HasPrefix(path, "/") || strings.Contains(path, "\n")) {
		err = errors.New("a lookup names the request's method and path: ?method=POST&path=/v1/charges")
	}
	asked := &http.Request{Method: method, Host: r.Host, URL: &url.URL{Path: path}, Header: http.Header{}}
	if err == nil && mux == nil && m.routed.Load() {
		err = errors.New("this middleware's Handlers are mounted on a mux's patterns, which key their requests: give Lookup the mux")
	}
	if err == nil && mux != nil {
		h, pattern := mux.Handler(asked)
		if p, ok := h.(protected); !ok || p.m != m {
			err = errors.New(method + " " + path + " is not a route this middleware protects")
		}
		asked.Pattern = pattern
	}
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	var step string
	step, c.tool = stepKey(method, route(asked), c.key)
	c.jkey = keyderive.ExplicitKey(m.ns, c.tenant, step)
	return c, 0, nil
}
