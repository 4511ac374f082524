package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/retryclass"
)

// Issue 14: an unknown outcome expires like a settled one, and a re-issue
// after its TTL runs the Unkeyed tool again. Unknown records never expire
// into a re-run: they wait for an operator.

// maybeSent performs its effect and then loses the answer: the outcome is
// unknown, and without a Reconcile hook it stays so.
func maybeSent(down *ledger) harness.Tool {
	return harness.Tool{Name: "send_mail", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			down.effect(ctxKey(ctx))
			return nil, retryclass.MarkMaybeExecuted(errors.New("read: connection reset by peer"))
		}}
}

func checkStillUnknown(t *testing.T, h *harness.Harness, down *ledger, c harness.ToolCall, later func()) {
	t.Helper()
	ctx := context.Background()
	first := h.Call(ctx, c)
	if !isUnknown(first) {
		t.Fatalf("first call: %s; want unknown", describe(first))
	}
	later()
	again := h.Call(ctx, c)
	if n := down.total(); n != 1 {
		t.Errorf("effects = %d; want 1 (an unknown outcome must not expire into a re-run)", n)
	}
	if !isUnknown(again) {
		t.Errorf("re-issue past the TTL: %s; want unknown", describe(again))
	}
}

// RecordTTL 200 ms, and the re-issue 300 ms later.
func TestUnknownNeverExpiresRecordTTL(t *testing.T) {
	var down ledger
	h := probeHarness(t, probeBolt(t, nil), &harness.Options{RecordTTL: 200 * time.Millisecond})
	probeRegister(t, h, maybeSent(&down))
	checkStillUnknown(t, h, &down, probeCall("send_mail", `{"to":"ann@example.com"}`),
		func() { time.Sleep(300 * time.Millisecond) })
}

// The default TTL (7 days), and the store's clock jumped 8 days.
func TestUnknownNeverExpiresClockJump(t *testing.T) {
	for name, open := range map[string]func(*testing.T, *journal.Options) journal.Store{
		"memory": func(_ *testing.T, o *journal.Options) journal.Store { return memory.New(o) },
		"bolt":   func(t *testing.T, o *journal.Options) journal.Store { return probeBolt(t, o) },
	} {
		t.Run(name, func(t *testing.T) {
			var jump atomic.Int64
			st := open(t, &journal.Options{Now: func() time.Time { return time.Now().Add(time.Duration(jump.Load())) }})
			var down ledger
			h := probeHarness(t, st, nil) // default TTL: 7 days
			probeRegister(t, h, maybeSent(&down))
			checkStillUnknown(t, h, &down, probeCall("send_mail", `{"to":"ann@example.com"}`),
				func() { jump.Store(int64(8 * 24 * time.Hour)) })
		})
	}
}
