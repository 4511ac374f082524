// Command readme is Genkit's Go quickstart, a generation with a tool, with
// the tool protected by agentonce. A scripted model stands in for the
// LLM, so it runs offline; it asks for the same charge twice, and the
// card is charged once. Run it again: the journal answers, and nothing
// is charged.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentonce/agentonce"
	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

type ChargeInput struct {
	Order string `json:"order" jsonschema_description:"the order to charge"`
	Cents int    `json:"cents" jsonschema_description:"the amount in cents"`
}

func main() {
	ctx := context.Background()
	g := genkit.Init(ctx) // in the quickstart: genkit.WithPlugins(&googlegenai.GoogleAI{})
	llm := genkit.DefineModel(g, "demo/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}},
		scriptedModel())

	// agentonce: a journal, and the tool defined through the adapter with
	// its effect kind.
	h, err := agentonce.Open(ctx, "agent.journal", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	a := agentgenkit.New(h, nil)

	charges := 0 // the side effect; a real tool would call a payment API
	chargeCard := agentgenkit.DefineTool(g, a,
		harness.Tool{Name: "charge_card", Description: "Charges the customer's card for an order.", Effect: journal.Unkeyed},
		func(tc *ai.ToolContext, in ChargeInput) (string, error) {
			charges++
			return fmt.Sprintf("charged %d cents for %s", in.Cents, in.Order), nil
		})

	msgs := []*ai.Message{ai.NewUserTextMessage("Charge order A-1001 49.00 USD.")}
	resp, err := genkit.Generate(agentgenkit.WithSession(ctx, "conversation-1", msgs), g,
		ai.WithModel(llm), ai.WithMessages(msgs...), ai.WithTools(chargeCard))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	fmt.Println("charges made by this run:", charges)
}

// scriptedModel stands in for the LLM: it asks for the charge, asks again
// as a model unsure of the answer might, then reports the answer.
func scriptedModel() ai.ModelFunc {
	round := 0
	return func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		msg := ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: "charge_card", Ref: fmt.Sprint("call_", round+1),
			Input: map[string]any{"order": "A-1001", "cents": 4900}}))
		if round++; round > 2 {
			last := req.Messages[len(req.Messages)-1].Content[0].ToolResponse
			out, _ := json.Marshal(last.Output)
			msg = ai.NewModelTextMessage("Done: " + string(out) + ".")
		}
		return &ai.ModelResponse{Request: req, Message: msg, FinishReason: ai.FinishReasonStop}, nil
	}
}
