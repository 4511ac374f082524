package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

func TestToolsListsRegisteredTools(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	mustRegister(t, h,
		harness.Tool{Name: "send_email", Description: "Send an email.", Func: fn},
		harness.Tool{Name: "charge_card", Description: "Charge a card.", Effect: journal.Keyed, Func: fn})
	ts := h.Tools()
	if len(ts) != 2 || ts[0].Name != "charge_card" || ts[1].Name != "send_email" {
		t.Fatalf("Tools() = %+v; want charge_card then send_email", ts)
	}
	if ts[0].Description != "Charge a card." || ts[0].Effect != journal.Keyed {
		t.Errorf("Tools()[0] = %q %v; want its description and effect kind", ts[0].Description, ts[0].Effect)
	}
}

// A call with no session or no turn would merge every identical call into
// one intent forever: refused, nothing recorded, unless a step key names
// the intent.
func TestCallNeedsSessionAndTurn(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	runs := 0
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { runs++; return json.RawMessage(`1`), nil }})
	for _, c := range []harness.ToolCall{
		{Tenant: "acme", Session: "s1", Tool: "charge", Input: json.RawMessage(`{}`)},
		{Tenant: "acme", Turn: "1", Tool: "charge", Input: json.RawMessage(`{}`)},
	} {
		res := h.Call(context.Background(), c)
		if res.Status != harness.Rejected || !errors.Is(res.Err, harness.ErrNoTurn) {
			t.Errorf("Call(session %q, turn %q) = %v, %v; want rejected with ErrNoTurn", c.Session, c.Turn, res.Status, res.Err)
		}
	}
	if runs != 0 {
		t.Errorf("tool runs = %d; want 0", runs)
	}
	if s, err := st.Stats(context.Background()); err != nil || s.Records != 0 {
		t.Errorf("records = %d (%v); want 0", s.Records, err)
	}
	res := h.Call(context.Background(), harness.ToolCall{Tenant: "acme", Tool: "charge", StepKey: "order:A-1", Input: json.RawMessage(`{}`)})
	if !res.OK() {
		t.Errorf("Call(step key, no turn) = %v, %v; want success", res.Status, res.Err)
	}
}
