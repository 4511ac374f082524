package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// A request that ran and was answered is never looked up as "not-run":
// Lookup(nil) keys by path, but the middleware's Handlers on a mux key by
// their pattern, so a lookup of a request to a pattern with a wildcard
// must find it or refuse, never say no request with the key is recorded.
func TestLookupWithoutMuxOnPatternRoutes(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		m, err := idempotency.New(open(), &idempotency.Options{ErrorLog: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		l := &ledger{}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/orders/{id}/refund", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.add(r.PathValue("id"))
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"refund":"re_1"}`))
		})))
		mux.Handle("GET /agentonce/lookup", m.Lookup(nil)) // "nil: keys scoped by path"
		srv := httptestServer(t, mux)

		if st, _, body := post(t, srv+"/v1/orders/7/refund", "k1", `{}`); st != 200 || l.count() != 1 {
			t.Fatalf("refund = %d %s, effects %d; want 200 and 1", st, body, l.count())
		}
		st, verdict, body := lookup(t, srv, "", "k1", "/v1/orders/7/refund")
		if verdict == "not-run" || st == http.StatusNotFound {
			t.Errorf("lookup of a refund that ran = %d %q %s; want succeeded, or a refusal naming the mux", st, verdict, body)
		}
	})
}

// A lookup's method is the request's as the middleware keyed it: "post" is
// not the POST a route without a method ran, and is refused rather than
// answered "not-run".
func TestLookupLowerCaseMethod(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		m, err := idempotency.New(open(), &idempotency.Options{ErrorLog: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		l := &ledger{}
		mux := http.NewServeMux()
		mux.Handle("/v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.add(r.Method)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"ch_1"}`))
		})))
		mux.Handle("GET /agentonce/lookup", m.Lookup(mux))
		srv := httptestServer(t, mux)

		if st, _, body := post(t, srv+"/v1/charges", "k1", `{}`); st != 200 || l.count() != 1 {
			t.Fatalf("charge = %d %s, effects %d; want 200 and 1", st, body, l.count())
		}
		req, _ := http.NewRequest(http.MethodGet, srv+"/agentonce/lookup?method=post&path=/v1/charges", nil)
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if v := resp.Header.Get(idempotency.LookupHeader); v == "not-run" || resp.StatusCode == http.StatusNotFound {
			t.Errorf("lookup of a charge that ran, method \"post\" = %d %q; want succeeded or 400", resp.StatusCode, v)
		}
	})
}
