package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/retryclass"
)

// A Keyed tool that charges a card over HTTP: the Transport sends the
// call's idempotency key, and the second, identical call is answered from
// the journal without reaching the payment API.
func Example() {
	charges := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		fmt.Fprintf(w, `{"charge":"ch_%d","key_sent":%t}`, charges, r.Header.Get("Idempotency-Key") != "")
	}))
	defer api.Close()
	client := &http.Client{Transport: &downstream.Transport{}}

	h := harness.New(memory.New(nil), nil) // agentonce.Open opens a journal file
	defer h.Close()
	err := h.Register(harness.Tool{
		Name:   "charge_card",
		Effect: journal.Keyed,
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

	call := harness.ToolCall{Tenant: "acme", Session: "chat-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"customer":"8812","amount":4900,"currency":"usd"}`)}
	for range 2 { // the model retries the same call
		res := h.Call(context.Background(), call)
		if res.Status == harness.Rejected {
			log.Fatal(res.Err)
		}
		fmt.Println(res.Status, res.Source, res.ForModel())
	}
	fmt.Println("charges:", charges)
	// Output:
	// succeeded executed {"charge":"ch_1","key_sent":true}
	// succeeded replayed {"charge":"ch_1","key_sent":true}
	// charges: 1
}

// One model response with parallel tool calls: the duplicate collapses into
// the first, and results come back in the calls' order.
func ExampleHarness_CallAll() {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	var sent atomic.Int32 // distinct calls run concurrently
	h.Register(harness.Tool{Name: "send_email", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			sent.Add(1)
			return json.RawMessage(`"sent"`), nil
		}})
	calls := []harness.ToolCall{
		{ID: "call_1", Session: "s1", Turn: "4", Tool: "send_email", Input: json.RawMessage(`{"to":"ana@example.com"}`)},
		{ID: "call_2", Session: "s1", Turn: "4", Tool: "send_email", Input: json.RawMessage(`{"to": "ana@example.com"}`)},
		{ID: "call_3", Session: "s1", Turn: "4", Tool: "send_email", Input: json.RawMessage(`{"to":"bo@example.com"}`)},
	}
	for _, r := range h.CallAll(context.Background(), calls) {
		fmt.Println(r.CallID, r.Status, r.Source, r.ForModel())
	}
	fmt.Println("emails sent:", sent.Load())
	// Output:
	// call_1 succeeded executed "sent"
	// call_2 succeeded collapsed "sent"
	// call_3 succeeded executed "sent"
	// emails sent: 2
}

// Typed adapts a function with Go types; input the model got wrong is a
// failure the model can correct.
func ExampleTyped() {
	type refund struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	h.Register(harness.Typed("refund", journal.Keyed, func(ctx context.Context, r refund) (string, error) {
		return fmt.Sprintf("refunded %d on %s", r.Amount, r.Order), nil
	}))
	for _, in := range []string{`{"order":"A-1","amount":500}`, `{"order":"A-1","amont":500}`} {
		res := h.Call(context.Background(), harness.ToolCall{Session: "s1", Turn: "1", Tool: "refund", Input: json.RawMessage(in)})
		fmt.Println(res.Status, res.Source, res.ForModel())
	}
	// Output:
	// succeeded executed "refunded 500 on A-1"
	// failed executed The tool failed and nothing was done: tool refund: decode input: json: unknown field "amont"
}

// A tool that a person must approve before it runs: the call is recorded
// awaiting approval and answered with the approver's command; the
// approval (agentctl approve, or Resolve) names the input's fingerprint;
// the model's re-issue then runs the refund once.
func ExampleTool_approvals() {
	store := memory.New(nil)
	h := harness.New(store, nil)
	defer h.Close()
	refunds := 0
	err := h.Register(harness.Tool{Name: "refund", Effect: journal.Keyed, Approvals: 1,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			refunds++
			return json.RawMessage(`{"refunded":true}`), nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	call := harness.ToolCall{Tenant: "acme", Session: "chat-1", Turn: "4", Tool: "refund",
		Input: json.RawMessage(`{"order":"A-1","amount":12000}`)}

	res := h.Call(context.Background(), call)
	fmt.Println(res.Status, refunds)

	rec, _ := store.Get(context.Background(), res.Key)
	if _, err := store.Resolve(context.Background(), res.Key, journal.Resolution{
		State: journal.StatePending, By: "alice@acme", Reason: "customer called", Fingerprint: rec.Fingerprint}); err != nil {
		log.Fatal(err)
	}
	res = h.Call(context.Background(), call) // the model asks again
	fmt.Println(res.Status, res.Source, refunds, string(res.Output))
	// Output:
	// awaiting-approval 0
	// succeeded executed 1 {"refunded":true}
}
