package downstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/downstream"
)

// A tool's HTTP request carries its call's key and attempt id; the harness
// gives every attempt such a context, and NewContext makes one for a test.
func ExampleTransport() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"key":%q,"attempt":%q}`, r.Header.Get("Idempotency-Key"), r.Header.Get("X-Request-Id"))
	}))
	defer api.Close()
	client := &http.Client{Transport: &downstream.Transport{}}

	key := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000001")
	ctx := downstream.NewContext(context.Background(), downstream.Attempt{Key: key, ID: "agent-1#1"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api.URL, nil)
	out, err := downstream.ReadJSON(client.Do(req))
	fmt.Println(string(out), err)
	// Output:
	// {"key":"5a3c9a3e-0000-5000-8000-000000000001","attempt":"agent-1#1"} <nil>
}

// A Reconcile hook's answer, as the harness reads it.
func ExampleHappened() {
	r := downstream.Happened([]byte(`{"id":"m-1"}`))
	out, ok := r.Happened()
	fmt.Println(string(out), ok, r.DidNotHappen())
	// Output:
	// {"id":"m-1"} true false
}

// A Reconcile hook for an API that looks a request up by its key: found
// is Happened with the record, 404 DidNotHappen.
func ExampleLookupReconcile() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages/by-key/5a3c9a3e-0000-5000-8000-000000000001" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"id":"m-1"}`)
	}))
	defer api.Close()
	reconcile := downstream.LookupReconcile(nil, func(key uuid.UUID, _ json.RawMessage) string {
		return api.URL + "/v1/messages/by-key/" + key.String()
	})
	for _, key := range []string{"5a3c9a3e-0000-5000-8000-000000000001", "5a3c9a3e-0000-5000-8000-000000000002"} {
		r := reconcile(context.Background(), uuid.MustParse(key), nil)
		out, ok := r.Happened()
		fmt.Printf("happened=%v %s did-not-happen=%v\n", ok, out, r.DidNotHappen())
	}
	// Output:
	// happened=true {"id":"m-1"} did-not-happen=false
	// happened=false  did-not-happen=true
}
