package harness_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// Issue 14: an outcome established by Reconcile was reported as Executed,
// as if the tool had answered. The caller must be told it was reconciled.
func TestReconciledIsSaid(t *testing.T) {
	var down ledger
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, harness.Tool{Name: "send_mail", Effect: journal.Unkeyed, Timeout: 100 * time.Millisecond,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			down.effect(ctxKey(ctx)) // the mail goes out, and the answer never comes
			<-ctx.Done()
			return nil, ctx.Err()
		},
		Reconcile: ledgerReconcile(&down, `{"sent":true}`)})
	res := h.Call(context.Background(), probeCall("send_mail", `{"to":"ann@example.com"}`))
	if n := down.total(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
	if !isSuccess(res) {
		t.Errorf("result: %s; want success (Reconcile found the mail)", describe(res))
	}
	if res.Source != harness.Reconciled {
		t.Errorf("Source = %v; want reconciled", res.Source)
	}
}
