package genkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentonce/agentonce"
	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// A genkit generation whose model asks for the same charge twice in one
// response: both tool requests go through the harness, and the payment
// API charges once.
func ExampleDefineTool() {
	dir, _ := os.MkdirTemp("", "agentonce-genkit")
	defer os.RemoveAll(dir)
	payments, _ := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"ch_1"}`)
	}), nil)
	api := httptest.NewServer(payments)
	defer api.Close()

	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	g := genkit.Init(ctx)
	a := agentgenkit.New(h, nil)

	client := &http.Client{Transport: &downstream.Transport{}} // sends the call's Idempotency-Key
	charge := agentgenkit.DefineTool(g, a, harness.Tool{Name: "charge_card", Description: "Charges the card.", Effect: journal.Keyed},
		func(tc *ai.ToolContext, in struct{ Cents int }) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(tc, "POST", api.URL+"/charges", strings.NewReader(fmt.Sprint(in.Cents)))
			return downstream.ReadJSON(client.Do(req))
		})

	// A model that asks for the charge twice, then repeats what it read.
	model := genkit.DefineModel(g, "demo/twice", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			last := req.Messages[len(req.Messages)-1]
			if last.Role == ai.RoleTool {
				b, _ := json.Marshal(last.Content[0].ToolResponse.Output)
				return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage("Charged: " + string(b))}, nil
			}
			call := func(ref string) *ai.Part {
				return ai.NewToolRequestPart(&ai.ToolRequest{Name: "charge_card", Ref: ref, Input: map[string]any{"Cents": 4900}})
			}
			return &ai.ModelResponse{Request: req, Message: ai.NewModelMessage(call("call_1"), call("call_2"))}, nil
		})

	msgs := []*ai.Message{ai.NewUserTextMessage("Charge me $49.")}
	resp, err := genkit.Generate(agentgenkit.WithSession(ctx, "conversation-42", msgs), g,
		ai.WithModel(model), ai.WithMessages(msgs...), ai.WithTools(charge))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("model:", resp.Text())
	fmt.Println("charges:", payments.TotalEffects())
	// Output:
	// model: Charged: {"id":"ch_1"}
	// charges: 1
}

// UserTurn counts the user's messages; tool responses are not one.
func ExampleUserTurn() {
	history := []*ai.Message{
		ai.NewUserTextMessage("Charge me $49."),
		ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: "charge_card", Ref: "call_1"})),
		ai.NewMessage(ai.RoleTool, nil, ai.NewToolResponsePart(&ai.ToolResponse{Name: "charge_card", Ref: "call_1"})),
	}
	fmt.Println(agentgenkit.UserTurn(history))
	history = append(history, ai.NewModelTextMessage("Charged."), ai.NewUserTextMessage("Now refund it."))
	fmt.Println(agentgenkit.UserTurn(history))
	// Output:
	// 1
	// 2
}
