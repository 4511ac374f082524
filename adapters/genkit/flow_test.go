package genkit_test

import (
	"context"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"

	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
)

// A flow whose tools read their scope from the flow's action context, as
// a context provider of a served flow sets it: the model's two identical
// charges make one charge, and a second run of the flow for the same turn
// (a client's retry of the HTTP request) is answered from the journal.
func TestFlowActionContext(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if !readTool(req) {
			return chargeRequest("call_1", "call_2")
		}
		return ai.NewModelTextMessage("Charged $49.")
	}}
	ag := newAgent(t, m, openHarness(t, journalPath(t)), s.URL, nil, false)
	flow := genkit.DefineFlow(ag.g, "checkout", func(ctx context.Context, text string) (string, error) {
		resp, err := ag.generate(ctx, ai.WithPrompt(text))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	ctx := core.WithActionContext(context.Background(), core.ActionContext{
		agentgenkit.TenantKey: "acme", agentgenkit.SessionKey: "conv-1", agentgenkit.TurnKey: "1",
	})
	for range 2 {
		out, err := flow.Run(ctx, "Charge me $49.")
		if err != nil {
			t.Fatal(err)
		}
		if out != "Charged $49." {
			t.Errorf("flow answered %q; want %q", out, "Charged $49.")
		}
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	for _, n := range []int{2, 4} {
		if got := m.toolOutputs(t, n); got["call_1"] != ch1 || got["call_2"] != ch1 {
			t.Errorf("model request %d read %v; want the one charge ch_1 twice", n, got)
		}
	}
}
