package eino_test

import (
	"context"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/adapters/eino"
)

// An adk ChatModelAgent run by an adk.Runner, with the scope in the run's
// session values instead of the context: the model's two identical
// charges in one response make one charge.
func TestADKSessionValues(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(
				callCharge("call_1", `{"amount":4900,"currency":"usd"}`),
				callCharge("call_2", `{"amount":4900,"currency":"usd"}`))
		}
		return schema.AssistantMessage("Charged $49.", nil)
	}}
	a := eino.New(openHarness(t, journalPath(t)), keyed)
	ctx := context.Background()
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "cashier",
		Description: "Charges cards.",
		Instruction: "You are a cashier.",
		Model:       m,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{chargeTool(t, s.URL, nil)},
			ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent})
	events := runner.Run(ctx, []adk.Message{schema.UserMessage("Charge me $49.")},
		adk.WithSessionValues(map[string]any{eino.SessionKey: "conv-1", eino.TurnKey: "1"}))
	for {
		ev, ok := events.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	got := toolResults(m.input(t, 2))
	if len(got) != 2 || got[0].Content != `{"id":"ch_1","amount":4900}` || got[1].Content != got[0].Content {
		t.Errorf("the model read %v; want the one charge ch_1 twice", contents(got))
	}
}
