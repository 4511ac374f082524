package downstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/downstream"
)

// LookupReconcile reads a lookup's answer: 2xx is Happened with its JSON
// body, 404 DidNotHappen, anything else (and a body it cannot take)
// CannotTell, saying why.
func TestLookupReconcile(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/charges/found":
			fmt.Fprint(w, `{"id":"ch_1"}`)
		case "/charges/missing":
			http.NotFound(w, r)
		case "/charges/text":
			fmt.Fprint(w, "charged")
		case "/charges/huge":
			fmt.Fprintf(w, `"%s"`, strings.Repeat("x", downstream.MaxLookupBytes))
		case "/charges/slow":
			<-r.Context().Done()
		default:
			http.Error(w, "down", http.StatusBadGateway)
		}
	}))
	defer api.Close()
	for _, tc := range []struct {
		key, happened string
		didNot        bool
		why           string
	}{
		{"found", `{"id":"ch_1"}`, false, ""},
		{"missing", "", true, ""},
		{"text", "", false, "not JSON"},
		{"huge", "", false, "over 1048576 bytes"},
		{"slow", "", false, "deadline exceeded"},
		{"other", "", false, "502 Bad Gateway"},
	} {
		hook := downstream.LookupReconcile(nil, func(key uuid.UUID, in json.RawMessage) string { return api.URL + "/charges/" + tc.key })
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if tc.key == "slow" {
			ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
		}
		r := hook(ctx, uuid.New(), nil)
		cancel()
		out, ok := r.Happened()
		why := ""
		if r.Why() != nil {
			why = r.Why().Error()
		}
		if string(out) != tc.happened || ok != (tc.happened != "") || r.DidNotHappen() != tc.didNot || !strings.Contains(why, tc.why) {
			t.Errorf("lookup of %s = happened %v %s, did not %v, why %q; want %s, %v, %q", tc.key, ok, out, r.DidNotHappen(), why, tc.happened, tc.didNot, tc.why)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 6 || asked[0] != "GET /charges/found" {
		t.Errorf("requests = %v; want one GET a lookup", asked)
	}
}

// ServerReconcile reads an agentonce lookup's verdict, never its status
// alone: a 404 without it is no "did not happen".
func TestServerReconcileVerdicts(t *testing.T) {
	for _, tc := range []struct {
		verdict string
		status  int
		want    string
	}{
		{"succeeded", 201, "happened"},
		{"succeeded", 402, "cannot tell"},
		{"not-run", 404, "did not happen"},
		{"in-flight", 409, "cannot tell"},
		{"unknown", 500, "cannot tell"},
		{"", 404, "cannot tell"},
	} {
		var got http.Header
		var query string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, query = r.Header, r.URL.RawQuery
			if tc.verdict != "" {
				w.Header().Set("Agentonce-Lookup", tc.verdict)
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, `{"id":"ch_1"}`)
		}))
		key := uuid.New()
		r := downstream.ServerReconcile(nil, srv.URL+"/lookup?v=1", "POST", "/v1/charges")(context.Background(), key, nil)
		srv.Close()
		verdict := "cannot tell"
		if _, ok := r.Happened(); ok {
			verdict = "happened"
		} else if r.DidNotHappen() {
			verdict = "did not happen"
		}
		if verdict != tc.want || got.Get("X-Agentonce-Key") != key.String() || query != "method=POST&path=%2Fv1%2Fcharges&v=1" {
			t.Errorf("%q %d = %s (%v), key %q, query %q; want %s, the key, method and path", tc.verdict, tc.status, verdict, r.Why(), got.Get("X-Agentonce-Key"), query, tc.want)
		}
	}
}
