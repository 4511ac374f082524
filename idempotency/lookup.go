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

// LookupHeader is the header of a lookup's answer (Lookup) that says what
// became of the key: "succeeded", "not-run", "in-flight" or "unknown".
const LookupHeader = "Agentonce-Lookup"

// Lookup returns a handler that tells a client what became of its request
// with a key, running nothing and writing nothing: the client's Reconcile
// (downstream.ServerReconcile) asks it. Mount it on a GET route behind
// the same authentication as the routes it answers for, since Tenant
// scopes the key as it scopes a replay:
//
//	mux.Handle("GET /agentonce/lookup", m.Lookup(mux))
//
// A lookup carries the key as the request did (Idempotency-Key or
// X-Agentonce-Key) and the request's method and path in its query
// (?method=POST&path=/v1/charges); mux finds the route that scopes the
// key, which must be a handler of m's (Handler), or the lookup gets 400
// lookup-invalid. A nil mux scopes keys by path, as Handler does outside a
// ServeMux. The body and fingerprint of the request are not compared.
//
// The answer's LookupHeader says: "succeeded", with the stored answer
// replayed as a retry would get it; "not-run" (404) when no request with
// the key took effect (no record, or one released or resolved failed);
// "in-flight" (409) while a request runs; "unknown" (500) for any other
// outcome, which is for Options.Reconcile or an operator. Any other
// answer carries no LookupHeader.
func (m *Middleware) Lookup(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tenant string
		var err error
		if m.o.Tenant != nil {
			if tenant, err = m.o.Tenant(r); err != nil {
				writeProblem(w, http.StatusUnauthorized, ProblemUnauthenticated, problem{Detail: err.Error()}, 0)
				return
			}
		}
		c, err := m.lookupCall(r, mux, tenant)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, ProblemLookupInvalid, problem{Detail: err.Error()}, 0)
			return
		}
		rec, err := m.store.Get(r.Context(), c.jkey)
		p := problem{Key: c.key, JournalKey: c.jkey.String()}
		h := w.Header()
		switch {
		case errors.Is(err, journal.ErrNotFound):
			h.Set(LookupHeader, "not-run")
			p.Detail = "no request with this key is recorded"
			writeProblem(w, http.StatusNotFound, ProblemNotRun, p, 0)
		case err != nil:
			p.Detail = err.Error()
			writeProblem(w, http.StatusServiceUnavailable, ProblemJournal, p, m.o.RetryAfter)
		case rec.State == journal.StateSucceeded:
			h.Set(LookupHeader, "succeeded")
			m.answer(w, c, &rec)
		case rec.State == journal.StateFailed && (rec.ErrorClass == ClassReleased || rec.Resolution != nil || reissue.LastAttemptNotExecuted(&rec)):
			h.Set(LookupHeader, "not-run")
			p.Detail = "the request committed nothing: " + rec.ErrorMessage
			writeProblem(w, http.StatusNotFound, ProblemNotRun, p, 0)
		case rec.State == journal.StatePending:
			h.Set(LookupHeader, "in-flight")
			p.Detail = "a request with this key is running, or its server stopped and the lease has not ended"
			writeProblem(w, http.StatusConflict, ProblemInFlight, p, m.o.RetryAfter)
		default:
			h.Set(LookupHeader, "unknown")
			p.Detail = "the request's outcome is " + rec.State.String() + " (" + rec.ErrorMessage + ")"
			writeProblem(w, http.StatusInternalServerError, ProblemOutcomeUnknown, p, 0)
		}
	})
}

// lookupCall reads a lookup by tenant: its key, and the method and route
// it asks about, which scope the key as they scope the request's.
func (m *Middleware) lookupCall(r *http.Request, mux *http.ServeMux, tenant string) (*call, error) {
	key, ok, err := requestKey(r)
	if err == nil && !ok {
		err = errors.New("a lookup carries the key in " + KeyHeader + " or " + AgentonceKeyHeader)
	}
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	method, path := q.Get("method"), q.Get("path")
	if method == "" || strings.ContainsAny(method, " \t\n/") || !strings.HasPrefix(path, "/") {
		return nil, errors.New("a lookup names the request's method and path: ?method=POST&path=/v1/charges")
	}
	asked := &http.Request{Method: method, Host: r.Host, URL: &url.URL{Path: path}, Header: http.Header{}}
	if mux != nil {
		h, pattern := mux.Handler(asked)
		if p, ok := h.(protected); !ok || p.m != m {
			return nil, errors.New(method + " " + path + " is not a route this middleware protects")
		}
		asked.Pattern = pattern
	}
	c := &call{key: key, tenant: tenant}
	var step string
	step, c.tool = stepKey(method, route(asked), key)
	c.jkey = keyderive.ExplicitKey(m.ns, tenant, step)
	return c, nil
}
