package downstream_test

import (
	"context"
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
