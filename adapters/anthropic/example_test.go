package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/adapters/anthropic/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// The agent loop: ask the model with the registered tools, run the tool
// calls of its response, send the tool results back, until it answers in
// text. The fake API stands in for api.anthropic.com; its model asks for
// the same charge twice in parallel, and the card is charged once.
func ExampleAdapter_Run() {
	dir, _ := os.MkdirTemp("", "agentonce-anthropic")
	defer os.RemoveAll(dir)
	shop := fakeshop.NewShop()
	defer shop.Close()
	api := fakeapi.New(func(req fakeapi.Request) []fakeapi.Block {
		if req.Last().Content[0].Type == "tool_result" {
			return []fakeapi.Block{fakeapi.Text("Charged $49.")}
		}
		return []fakeapi.Block{
			fakeapi.ToolUse("toolu_1", "charge_card", `{"amount":4900,"currency":"usd"}`),
			fakeapi.ToolUse("toolu_2", "charge_card", `{"amount":4900,"currency":"usd"}`),
		}
	})
	defer api.Close()

	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	if err := h.Register(shop.ChargeTool()); err != nil {
		log.Fatal(err)
	}
	a := anthropic.New(h, &anthropic.Options{Tenant: "acme"})
	client := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test-key"))

	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Charge me $49."))}
	for {
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{
			Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: history, Tools: a.Tools(),
		})
		if err != nil {
			log.Fatal(err)
		}
		reply, results := a.Run(context.Background(), "conversation-42", history, msg)
		history = append(history, msg.ToParam())
		if len(results) == 0 {
			fmt.Println("model:", msg.Content[0].Text)
			break
		}
		for _, r := range results {
			fmt.Println(r.CallID, r.Status, r.Source)
		}
		history = append(history, reply)
	}
	fmt.Println("charges:", len(shop.Charges()))
	// Output:
	// toolu_1 succeeded executed
	// toolu_2 succeeded collapsed
	// model: Charged $49.
	// charges: 1
}

// The turn is the count of real user messages; tool results are not one.
func ExampleUserTurn() {
	history := []sdk.MessageParam{
		sdk.NewUserMessage(sdk.NewTextBlock("Charge me $49.")),
		sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_1", map[string]any{"amount": 4900}, "charge_card")),
		sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_1", `{"id":"ch_1"}`, false)),
	}
	fmt.Println(anthropic.UserTurn(history))
	history = append(history,
		sdk.NewAssistantMessage(sdk.NewTextBlock("Charged.")),
		sdk.NewUserMessage(sdk.NewTextBlock("Thanks. Now refund it.")),
	)
	fmt.Println(anthropic.UserTurn(history))
	// Output:
	// 1
	// 2
}

// Tools gives each registered tool's name, description and input schema:
// for a Typed tool, the JSON Schema of its Go input type.
func ExampleAdapter_Tools() {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	type lookup struct {
		ID string `json:"id" jsonschema:"the order's id"`
	}
	tool := harness.Typed("lookup_order", journal.ReadOnly, func(ctx context.Context, in lookup) (string, error) {
		return in.ID, nil
	})
	tool.Description = "Looks an order up by id."
	h.Register(tool)
	b, _ := json.Marshal(anthropic.New(h, nil).Tools())
	fmt.Println(string(b))
	// Output:
	// [{"input_schema":{"type":"object","properties":{"id":{"type":"string","description":"the order's id"}},"required":["id"],"additionalProperties":false},"name":"lookup_order","description":"Looks an order up by id."}]
}

// RunTurn is for an application that numbers its user turns itself.
func ExampleAdapter_RunTurn() {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	h.Register(harness.Tool{
		Name:   "send_email",
		Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"sent":true}`), nil
		},
	})
	a := anthropic.New(h, nil)
	var msg sdk.Message // as the API returned it
	json.Unmarshal([]byte(`{"role":"assistant","stop_reason":"tool_use","content":[
		{"type":"tool_use","id":"toolu_7","name":"send_email","input":{"to":"ada@example.com"}}]}`), &msg)

	for range 2 { // the same response, run twice in user turn 3
		reply, results := a.RunTurn(context.Background(), "conversation-42", "3", &msg)
		b := reply.OfUser.Content[0].OfToolResult
		fmt.Println(b.ToolUseID, b.IsError.Value, *b.Content[0].GetText(), results[0].Source)
	}
	// Output:
	// toolu_7 false {"sent":true} executed
	// toolu_7 false {"sent":true} replayed
}
