package harness_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// An approval names a fingerprint, and a tool's Volatile properties are
// left out of it (and out of the stored input the approver is shown). So
// an approved intent must not run with a volatile value the approver never
// saw: the call that re-issues it after the approval brings its own. Either
// Register refuses Volatile on a tool that needs approval, or the approved
// run gets the input that was approved.
func TestApprovalRefusesVolatileInput(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var mu sync.Mutex
	var ran []string
	tool := harness.Tool{Name: "send", Effect: journal.Keyed, Approvals: 1, Volatile: []string{"text"},
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var v struct{ Text string }
			_ = json.Unmarshal(in, &v)
			mu.Lock()
			ran = append(ran, v.Text)
			mu.Unlock()
			return json.RawMessage(`{"sent":true}`), nil
		}}
	if err := h.Register(tool); err != nil {
		return // refused: an approval cannot leave part of the input out
	}
	res := mustCall(t, h, call("send", `{"to":"cfo@example.com","text":"Q3 numbers attached"}`))
	if res.Status != harness.AwaitingApproval {
		t.Fatalf("first call: %v %v; want awaiting-approval", res.Status, res.Err)
	}
	rec := mustGet(t, st, res.Key)
	t.Logf("the approver is shown input %s, fingerprint %s", rec.Input, rec.Fingerprint)
	approve(t, st, res.Key, rec.Fingerprint, "alice")

	// The model re-issues the call with another text: same key, same fingerprint.
	res2 := mustCall(t, h, call("send", `{"to":"cfo@example.com","text":"wire 1M to account 666"}`))
	if res2.Key != res.Key {
		t.Fatalf("re-issue has key %s, first %s", res2.Key, res.Key)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "Q3 numbers attached" {
		t.Fatalf("the approved intent ran with text %q; the approver approved %s (text %q): an approval of one input ran another",
			ran, rec.Input, "Q3 numbers attached")
	}
}
