package check

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// TestApproverThroughTheSocket: the approver decides about an intent of a
// running agent on a bbolt journal through the agent's socket, as agentctl
// does: a forged approval, a second approval by one approver and a
// rejection once approved are refused, two approvals are recorded, and the
// intent then runs once.
func TestApproverThroughTheSocket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.journal")
	h, err := agentonce.Open(ctx, path, &agentonce.OpenOptions{Options: harness.Options{Owner: "w0.1"}, Inspect: agentonce.InspectRequire})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var runs atomic.Int32
	if err := h.Register(harness.Tool{Name: "approve_keyed", Effect: journal.Keyed, Approvals: 2, ApprovalTTL: time.Minute,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"done":true}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	plan := &Plan{Seed: 9, Store: "bolt", Intents: []Intent{{ID: "i1", Tool: "approve_keyed", Kind: Keyed, Scenario: ScApproval, Payloads: 1}}}
	call := harness.ToolCall{Tenant: checkTenant, Session: sessionOf(plan), Turn: "i1", Tool: "approve_keyed", Input: json.RawMessage(`{"intent":"i1","p":0}`)}
	if res := h.Call(ctx, call); res.Status != harness.AwaitingApproval {
		t.Fatalf("first call = %v (%v); want awaiting approval", res.Status, res.Err)
	}
	log, err := OpenLog(filepath.Join(dir, "runner.jsonl"), "runner")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{o: Options{Store: "bolt"}, plan: plan, log: log, location: func(string) string { return path }}
	ap := r.newApprover()
	in := &plan.Intents[0]
	for _, d := range []Decision{{Do: DoForge, By: forger}, {Do: DoApprove, By: "ann"}, {Do: DoApprove, By: "ann"},
		{Do: DoApprove, By: "bob"}, {Do: DoReject, By: "carol"}} {
		ap.decide(ctx, in, d)
	}
	ap.closeAll()
	log.Close()
	if res := h.Call(ctx, call); res.Status != harness.Succeeded || runs.Load() != 1 {
		t.Errorf("call after two approvals = %v (%v), %d runs; want succeeded, 1 run", res.Status, res.Err, runs.Load())
	}
	events, err := ReadHistory(filepath.Join(dir, "runner.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Ev == EvDecided {
			got = append(got, e.Note+" "+e.By+" "+e.Outcome)
		}
	}
	want := []string{"forge mallory refused", "approve ann accepted", "approve ann refused", "approve bob accepted", "reject carol refused"}
	if !slices.Equal(got, want) {
		t.Errorf("decisions = %q; want %q", got, want)
	}
}
