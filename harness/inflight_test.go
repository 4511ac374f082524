package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// Issue 14: a 409 ("a request with this key is being processed") outlasting
// the in-flight budget is recorded as a suppression, and every re-issue is
// answered "still in progress" from the journal, long after the downstream
// finished and stored its answer. An in-progress suppression must ask the
// downstream again.
func TestInFlightSuppressionAsksAgain(t *testing.T) {
	down, err := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond) // the charge takes its time; r.Context() is ignored on purpose
		fmt.Fprint(w, `{"charge":"ch_1"}`)
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(down)
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &downstream.Transport{Base: srv.Client().Transport}}

	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed, Timeout: 100 * time.Millisecond,
		Retry: &retryclass.Policy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
			InFlightBudget: 200 * time.Millisecond},
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/charges", nil)
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			return io.ReadAll(resp.Body)
		}})
	ctx := context.Background()
	c := probeCall("charge", `{"amount":4900}`)

	first := h.Call(ctx, c)
	// A 409 that outlasts the in-flight budget is a suppression whose text
	// says "in progress"; it is not final (the re-issue below asks again).
	if oe, ok := first.Err.(*harness.OutcomeError); !isSuppressed(first) || !ok || oe.Class != retryclass.InFlight {
		t.Fatalf("first call (409 past the in-flight budget): %s; want suppressed (in-flight)", describe(first))
	}
	// Wait for the downstream to finish the charge and store its answer.
	for deadline := time.Now().Add(5 * time.Second); down.TotalEffects() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the downstream never finished the charge")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)

	again := h.Call(ctx, c)
	if !isSuccess(again) || string(again.Output) != `{"charge":"ch_1"}` {
		t.Errorf("re-issue after the downstream finished: %s; want its stored success {\"charge\":\"ch_1\"}", describe(again))
	}
	if n := down.TotalEffects(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
}
