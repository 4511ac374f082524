package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// Issue 14: a caller whose context ends while its tool runs is told the
// call "was rejected and did not run", though the tool is running and
// will take effect. It must be told the intent is in progress.

// slowCharge runs for 300 ms whatever its context says (the downstream has
// the request), then charges; done is closed when it returned.
func slowCharge(down *ledger, done chan struct{}) harness.Tool {
	return harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			defer close(done)
			time.Sleep(300 * time.Millisecond)
			down.effect(ctxKey(ctx))
			return json.RawMessage(`{"charged":true}`), nil
		}}
}

// checkInProgress checks what a caller that left mid-flight was told.
func checkInProgress(t *testing.T, who string, r harness.Result) {
	t.Helper()
	if !isInProgress(r) || saidDidNotRun(r) {
		t.Errorf("%s: %s; want in progress, not rejected or \"did not run\"", who, describe(r))
	}
}

// checkReissue re-issues c once the tool has returned: it is answered from
// the journal with the success, and nothing runs again.
func checkReissue(t *testing.T, h *harness.Harness, down *ledger, done chan struct{}, c harness.ToolCall) {
	t.Helper()
	<-done
	again := h.Call(context.Background(), c)
	if !isSuccess(again) || executedHere(again) {
		t.Errorf("re-issue after the tool finished: %s; want the recorded success, replayed", describe(again))
	}
	if n := down.total(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
}

// A caller with a 50 ms deadline and a 300 ms tool.
func TestInProgressNotDidNotRun(t *testing.T) {
	var down ledger
	done := make(chan struct{})
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, slowCharge(&down, done))
	c := probeCall("charge", `{"amount":4900}`)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := h.Call(ctx, c)
	checkInProgress(t, "caller that left", r)
	checkReissue(t, h, &down, done, c)
}

// The same through CallAll, with the call twice in one model response.
func TestInProgressNotDidNotRunCallAll(t *testing.T) {
	var down ledger
	done := make(chan struct{})
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, slowCharge(&down, done))
	c := probeCall("charge", `{"amount":4900}`)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rs := h.CallAll(ctx, []harness.ToolCall{c, c})
	for i, r := range rs {
		checkInProgress(t, fmt.Sprintf("CallAll result %d", i), r)
	}
	checkReissue(t, h, &down, done, c)
}
