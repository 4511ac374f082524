package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// Issue 14: calls with the same step key but different inputs have the same
// key, and the old code collapses them into one flight: the second caller
// is told its order of 5900 succeeded with the output of the 4900 one. The
// same key with another fingerprint must be suppressed as a mismatch.

type amountIn struct {
	Amount int `json:"amount"`
}

// chargeTool charges the amount it is given; the output names the amount,
// so that an answer carrying another call's output shows.
func chargeTool(down *ledger, before func()) harness.Tool {
	return harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			if before != nil {
				before()
			}
			var a amountIn
			if err := json.Unmarshal(in, &a); err != nil {
				return nil, err
			}
			down.effect(fmt.Sprint(a.Amount))
			return json.RawMessage(fmt.Sprintf(`{"charged":%d}`, a.Amount)), nil
		}}
}

func stepCall(step string, amount int) harness.ToolCall {
	c := probeCall("charge", fmt.Sprintf(`{"amount":%d}`, amount))
	c.StepKey = step
	return c
}

// checkStepCollapse checks the answers of two calls with one step key and
// different amounts: one executed, the other suppressed, one effect, and
// no success that carries the other call's output.
func checkStepCollapse(t *testing.T, down *ledger, amounts [2]int, res [2]harness.Result) {
	t.Helper()
	if n := down.total(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
	if isSuccess(res[0]) && isSuccess(res[1]) {
		t.Errorf("both calls succeeded: %s | %s; want one suppressed", describe(res[0]), describe(res[1]))
	}
	for i, r := range res {
		want := fmt.Sprintf(`{"charged":%d}`, amounts[i])
		if isSuccess(r) && string(r.Output) != want {
			t.Errorf("call of %d: success with output %s; want its own output %s or no success", amounts[i], r.Output, want)
		}
	}
}

// Two calls of one model response with the step key order:A-1001 and
// amounts 4900 and 5900.
func TestCollapseByFingerprintCallAll(t *testing.T) {
	var down ledger
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, chargeTool(&down, nil))
	amounts := [2]int{4900, 5900}
	rs := h.CallAll(context.Background(), []harness.ToolCall{stepCall("order:A-1001", amounts[0]), stepCall("order:A-1001", amounts[1])})
	checkStepCollapse(t, &down, amounts, [2]harness.Result{rs[0], rs[1]})
	if !isSuppressed(rs[1]) {
		t.Errorf("call of 5900: %s; want suppressed (same step key, other input)", describe(rs[1]))
	}
}

// Two concurrent Calls with one step key and amounts 100 and 999900, the
// second made while the first is in its tool.
func TestCollapseByFingerprintConcurrent(t *testing.T) {
	var down ledger
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	h := probeHarness(t, probeBolt(t, nil), nil)
	// The tool holds the first call in flight until the second call has
	// been answered (or a second has passed, if it joins and waits).
	probeRegister(t, h, chargeTool(&down, func() {
		entered <- struct{}{}
		select {
		case <-release:
		case <-time.After(time.Second):
		}
	}))
	amounts := [2]int{100, 999900}
	var res [2]harness.Result
	var wg sync.WaitGroup
	ctx := context.Background()
	wg.Add(1)
	go func() {
		defer wg.Done()
		res[0] = h.Call(ctx, stepCall("order:A-1001", amounts[0]))
	}()
	<-entered
	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		res[1] = h.Call(ctx, stepCall("order:A-1001", amounts[1]))
	}()
	select {
	case <-secondDone:
	case <-time.After(300 * time.Millisecond): // it joined the first flight
	}
	close(release)
	<-secondDone
	wg.Wait()

	checkStepCollapse(t, &down, amounts, res)
	if !isSuppressed(res[1]) {
		t.Errorf("call of 999900: %s; want suppressed (same step key, other input)", describe(res[1]))
	}
}
