package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// lookup asks srv's lookup handler about key for a POST to path, as
// tenant, and returns the status, the Agentonce-Lookup header and the body.
func lookup(t *testing.T, url, tenant, key, path string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/agentonce/lookup?method=POST&path="+path, nil)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Authorization", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(idempotency.LookupHeader), string(b)
}

// A lookup says what became of a key, scoped by tenant and route, and
// runs nothing and records nothing.
func TestLookup(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		m, err := idempotency.New(store, &idempotency.Options{ErrorLog: t.Logf,
			Tenant: func(r *http.Request) (string, error) {
				if a := r.Header.Get("Authorization"); a != "" {
					return a, nil
				}
				return "", errors.New("no Authorization")
			}})
		if err != nil {
			t.Fatal(err)
		}
		s := &shop{}
		release := make(chan struct{})
		var runs atomic.Int32
		mux := http.NewServeMux()
		mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(s.handler)))
		mux.Handle("POST /v1/orders/{id}/refund", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			switch r.Header.Get("Idempotency-Key") {
			case "busy":
				<-release
			case "boom":
				panic(http.ErrAbortHandler)
			}
			http.Error(w, "ledger down", http.StatusServiceUnavailable)
		})))
		mux.HandleFunc("POST /v1/open", func(http.ResponseWriter, *http.Request) {})
		mux.Handle("GET /agentonce/lookup", m.Lookup(mux))
		srv := httptestServer(t, mux)

		post(t, srv+"/v1/charges", "paid", `{"amount":100}`, "Authorization", "acme")
		post(t, srv+"/v1/orders/7/refund", "released", `{}`, "Authorization", "acme")
		post(t, srv+"/v1/orders/7/refund", "boom", `{}`, "Authorization", "acme")
		done := make(chan struct{})
		go func() { post(t, srv+"/v1/orders/7/refund", "busy", `{}`, "Authorization", "acme"); close(done) }()
		for st, _, _ := lookup(t, srv, "acme", "busy", "/v1/orders/7/refund"); st == http.StatusNotFound; st, _, _ = lookup(t, srv, "acme", "busy", "/v1/orders/7/refund") {
			time.Sleep(5 * time.Millisecond) // until the request is recorded
		}
		before, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			tenant, key, path string
			status            int
			verdict, body     string
		}{
			{"acme", "paid", "/v1/charges", 201, "succeeded", `{"id":"ch_1"}`},
			{"acme", "nobody", "/v1/charges", 404, "not-run", idempotency.ProblemNotRun},
			{"globex", "paid", "/v1/charges", 404, "not-run", idempotency.ProblemNotRun}, // another tenant's key
			{"acme", "released", "/v1/orders/9/refund", 404, "not-run", "is failed: the handler answered 503"},
			{"acme", "busy", "/v1/orders/7/refund", 409, "in-flight", idempotency.ProblemInFlight},
			{"acme", "boom", "/v1/orders/7/refund", 500, "unknown", idempotency.ProblemOutcomeUnknown},
			{"acme", "paid", "/v1/open", 400, "", "not a route this middleware protects"},
			{"acme", "paid", "/v1/nowhere", 400, "", "not a route this middleware protects"},
			{"acme", "", "/v1/charges", 400, "", "carries the key"},
			{"acme", "paid", "/v1/charges%0Ax", 400, "", "names the request's method and path"},
			{"", "paid", "/v1/charges", 401, "", idempotency.ProblemUnauthenticated},
		} {
			st, verdict, body := lookup(t, srv, tc.tenant, tc.key, tc.path)
			if st != tc.status || verdict != tc.verdict || !strings.Contains(body, tc.body) {
				t.Errorf("lookup(%s, %s, %s) = %d %q %s; want %d %q with %q", tc.tenant, tc.key, tc.path, st, verdict, body, tc.status, tc.verdict, tc.body)
			}
		}
		close(release)
		<-done
		after, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if after.Records != before.Records || s.runs.Load() != 1 || runs.Load() != 3 {
			t.Errorf("records %d → %d, runs %d and %d; want no record and no run from a lookup", before.Records, after.Records, s.runs.Load(), runs.Load())
		}
	})
}

// The two ends of the wire: an Unkeyed harness tool whose answer from an
// agentonce server is lost after the server ran asks the server about its
// key, and is answered with the server's answer; the handler ran once.
func TestServerReconcile(t *testing.T) {
	s := &shop{}
	m, err := idempotency.New(openBolt(t), &idempotency.Options{ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	srv := shopServer(t, m, s)
	lost := agentoncetest.NewFaultTransport(nil, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{agentoncetest.LoseResponse}})
	client := &http.Client{Transport: &downstream.Transport{Base: lost}}

	h := harness.New(openBolt(t), nil)
	defer h.Close()
	err = h.Register(harness.Tool{
		Name: "charge",
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(string(in)))
			req.Header.Set("Content-Type", "application/json")
			return downstream.ReadJSON(client.Do(req))
		},
		Reconcile: downstream.ServerReconcile(nil, srv.URL+"/agentonce/lookup", http.MethodPost, "/v1/charges"),
	})
	if err != nil {
		t.Fatal(err)
	}
	call := harness.ToolCall{Session: "s", Turn: "1", Tool: "charge", Input: json.RawMessage(`{"amount":100}`)}
	res := h.Call(t.Context(), call)
	if res.Status != harness.Succeeded || res.Source != harness.Reconciled || string(res.Output) != `{"id":"ch_1"}` {
		t.Fatalf("call whose answer was lost = %v %v %s (%v); want succeeded, reconciled, ch_1", res.Status, res.Source, res.Output, res.Err)
	}
	if again := h.Call(t.Context(), call); string(again.Output) != `{"id":"ch_1"}` || again.Source != harness.Replayed {
		t.Errorf("the call again = %v %s; want ch_1 replayed", again.Source, again.Output)
	}
	if lost.Injected(agentoncetest.LoseResponse) != 1 || s.runs.Load() != 1 {
		t.Errorf("lost answers %d, handler runs %d; want 1 and 1", lost.Injected(agentoncetest.LoseResponse), s.runs.Load())
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
