package harness_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// Issue 13: on PostgreSQL the lease is judged by each client's clock. A
// client whose clock is minutes ahead (or an owner whose clock is behind)
// sees a live lease as expired and takes the intent over while the owner
// is still running it. The database server's clock must decide.
func TestClockSkewNoTakeover(t *testing.T) {
	skewed := func(d time.Duration) *journal.Options {
		return &journal.Options{Now: func() time.Time { return time.Now().Add(d) }}
	}
	for _, tc := range []struct {
		name          string
		owner, caller time.Duration
	}{
		{"caller ahead", 0, 2 * time.Minute},
		{"owner behind", -2 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stOwner := probePG(t, "", skewed(tc.owner))
			stCaller := probePG(t, stOwner.Schema(), skewed(tc.caller))
			var down ledger
			tool := harness.Tool{Name: "send_invoice", Effect: journal.Unkeyed,
				Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					time.Sleep(2 * time.Second)
					down.effect(ctxKey(ctx))
					return json.RawMessage(`{"sent":true}`), nil
				},
				Reconcile: ledgerReconcile(&down, `{"sent":true}`)}
			// Default lease: 1 minute.
			h1 := probeHarness(t, stOwner, &harness.Options{Owner: "agent-1"})
			h2 := probeHarness(t, stCaller, &harness.Options{Owner: "agent-2"})
			probeRegister(t, h1, tool)
			probeRegister(t, h2, tool)

			ctx := context.Background()
			c := probeCall("send_invoice", `{"invoice":8}`)
			done := make(chan harness.Result, 1)
			go func() {
				r := h1.Call(ctx, c)
				done <- r
			}()
			time.Sleep(300 * time.Millisecond)
			second := h2.Call(ctx, c)
			first := <-done
			time.Sleep(200 * time.Millisecond)

			if n := down.total(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
			if !isSuccess(first) {
				t.Errorf("owner: %s; want success", describe(first))
			}
			if !toldTheTruthLater(second) {
				t.Errorf("skewed caller: %s; want in progress, replayed or collapsed", describe(second))
			}
		})
	}
}
