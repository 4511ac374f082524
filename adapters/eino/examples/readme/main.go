// Command readme is eino's react agent quickstart with its tool calls
// protected by agentonce. A scripted model stands in for the LLM, so it
// runs offline; it asks for the same charge twice, and the card is
// charged once. Run it again: the journal answers, and nothing is charged.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

type ChargeInput struct {
	Order string `json:"order" jsonschema:"description=the order to charge"`
	Cents int    `json:"cents" jsonschema:"description=the amount in cents"`
}

func main() {
	ctx := context.Background()
	charges := 0 // the side effect; a real tool would call a payment API
	chargeCard, err := utils.InferTool("charge_card", "Charges the customer's card for an order.",
		func(ctx context.Context, in ChargeInput) (string, error) {
			charges++
			return fmt.Sprintf("charged %d cents for %s", in.Cents, in.Order), nil
		})
	if err != nil {
		log.Fatal(err)
	}

	// agentonce: a journal, each tool's effect kind, the middleware.
	h, err := agentonce.Open(ctx, "agent.journal", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	a := eino.New(h, &eino.Options{Tools: map[string]harness.Tool{"charge_card": {Effect: journal.Unkeyed}}})

	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: &scriptedModel{}, // in the quickstart: openai.NewChatModel
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{chargeCard},
			ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	msgs := []*schema.Message{schema.UserMessage("Charge order A-1001 49.00 USD.")}
	out, err := agent.Generate(eino.WithSession(ctx, "conversation-1", msgs), msgs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Content)
	fmt.Println("charges made by this run:", charges)
}

// scriptedModel stands in for the LLM: it asks for the charge, asks again
// as a model unsure of the answer might, then reports the answer.
type scriptedModel struct{ round int }

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if m.round++; m.round <= 2 {
		return schema.AssistantMessage("", []schema.ToolCall{{ID: fmt.Sprint("call_", m.round),
			Function: schema.FunctionCall{Name: "charge_card", Arguments: `{"order":"A-1001","cents":4900}`}}}), nil
	}
	return schema.AssistantMessage("Done: "+in[len(in)-1].Content+".", nil), nil
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{msg}), err
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}
