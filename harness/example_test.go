package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

// A Keyed tool that charges a card over HTTP: the Transport sends the
// call's idempotency key, and the second, identical call is answered from
// the journal without reaching the payment API.
func Example() {
	dir, _ := os.MkdirTemp("", "agentonce-example")
	defer os.RemoveAll(dir)

	charges := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		fmt.Fprintf(w, `{"charge":"ch_%d","key_sent":%t}`, charges, r.Header.Get("Idempotency-Key") != "")
	}))
	defer api.Close()
	client := &http.Client{Transport: &harness.Transport{}}

	h, err := harness.Open(context.Background(), filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	err = h.Register(harness.Tool{
		Name:   "charge_card",
		Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api.URL, nil)
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if err := retryclass.ResponseError(resp); err != nil {
				return nil, err
			}
			var out json.RawMessage
			return out, json.NewDecoder(resp.Body).Decode(&out)
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	call := harness.Call{Tenant: "acme", Session: "chat-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"customer":"8812","amount":4900,"currency":"usd"}`)}
	for range 2 { // the model retries the same call
		res, err := h.Call(context.Background(), call)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status, res.ForModel())
	}
	fmt.Println("charges:", charges)
	// Output:
	// executed {"charge":"ch_1","key_sent":true}
	// replayed {"charge":"ch_1","key_sent":true}
	// charges: 1
}
