package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// exampleModel asks for the same charge twice in parallel, then answers.
func exampleModel(conv []fakeapi.Msg) fakeapi.Reply {
	if fakeapi.Last(conv).Role == "tool" {
		return fakeapi.Reply{Text: "Charged $49."}
	}
	return fakeapi.Reply{Calls: []fakeapi.Call{
		{ID: "call_1", Name: "charge_card", Arguments: `{"amount":4900,"currency":"usd"}`},
		{ID: "call_2", Name: "charge_card", Arguments: `{"amount":4900,"currency":"usd"}`},
	}}
}

// exampleHarness opens a journal in dir with the shop's charge tool.
func exampleHarness(dir string, shop *fakeshop.Shop) *harness.Harness {
	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Register(shop.ChargeTool()); err != nil {
		log.Fatal(err)
	}
	return h
}

// The Chat Completions loop: ask with the registered tools, run the tool
// calls, send the tool messages back, until the model answers in text. The
// fake API stands in for api.openai.com; its model asks for the same
// charge twice in parallel, and the card is charged once.
func ExampleAdapter_RunChat() {
	dir, _ := os.MkdirTemp("", "agentonce-openai")
	defer os.RemoveAll(dir)
	shop := fakeshop.NewShop()
	defer shop.Close()
	api := fakeapi.New(exampleModel)
	defer api.Close()
	h := exampleHarness(dir, shop)
	defer h.Close()
	a := openai.New(h, &openai.Options{Tenant: "acme"})
	client := sdk.NewClient(option.WithBaseURL(api.URL+"/v1/"), option.WithAPIKey("test-key"))

	history := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Charge me $49.")}
	for {
		cc, err := client.Chat.Completions.New(context.Background(), sdk.ChatCompletionNewParams{
			Model: sdk.ChatModelGPT4o, Messages: history, Tools: a.ChatTools(),
		})
		if err != nil {
			log.Fatal(err)
		}
		msg := cc.Choices[0].Message
		toolMsgs, results := a.RunChat(context.Background(), "conversation-42", history, msg)
		history = append(history, msg.ToParam())
		if len(results) == 0 {
			fmt.Println("model:", msg.Content)
			break
		}
		for _, r := range results {
			fmt.Println(r.CallID, r.Status, r.Source)
		}
		history = append(history, toolMsgs...)
	}
	fmt.Println("charges:", len(shop.Charges()))
	// Output:
	// call_1 succeeded executed
	// call_2 succeeded collapsed
	// model: Charged $49.
	// charges: 1
}

// The Responses API loop, chained by previous_response_id: each request
// sends only the function_call_output items, so the application counts
// its user turns itself and calls RunResponseTurn.
func ExampleAdapter_RunResponseTurn() {
	dir, _ := os.MkdirTemp("", "agentonce-openai")
	defer os.RemoveAll(dir)
	shop := fakeshop.NewShop()
	defer shop.Close()
	api := fakeapi.New(exampleModel)
	defer api.Close()
	h := exampleHarness(dir, shop)
	defer h.Close()
	a := openai.New(h, &openai.Options{Tenant: "acme"})
	client := sdk.NewClient(option.WithBaseURL(api.URL+"/v1/"), option.WithAPIKey("test-key"))

	userTurns := 1
	params := responses.ResponseNewParams{
		Model: sdk.ChatModelGPT4o,
		Tools: a.ResponseTools(),
		Input: responses.ResponseNewParamsInputUnion{OfString: param.NewOpt("Charge me $49.")},
	}
	for {
		resp, err := client.Responses.New(context.Background(), params)
		if err != nil {
			log.Fatal(err)
		}
		outputs, results := a.RunResponseTurn(context.Background(), "conversation-42", fmt.Sprint(userTurns), resp)
		if len(results) == 0 {
			fmt.Println("model:", resp.OutputText())
			break
		}
		for _, r := range results {
			fmt.Println(r.CallID, r.Status, r.Source)
		}
		params.PreviousResponseID = param.NewOpt(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	}
	fmt.Println("charges:", len(shop.Charges()))
	// Output:
	// call_1 succeeded executed
	// call_2 succeeded collapsed
	// model: Charged $49.
	// charges: 1
}

// RunResponse derives the turn from the whole input; the same response
// run again in the same turn is answered from the journal.
func ExampleAdapter_RunResponse() {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	h.Register(harness.Tool{
		Name:   "send_email",
		Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"sent":true}`), nil
		},
	})
	a := openai.New(h, nil)
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Mail Ada the invoice.", responses.EasyInputMessageRoleUser),
	}
	var resp responses.Response // as the API returned it
	json.Unmarshal([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[
		{"type":"function_call","id":"fc_1","call_id":"call_7","name":"send_email","arguments":"{\"to\":\"ada@example.com\"}","status":"completed"}]}`), &resp)

	for range 2 {
		outputs, results := a.RunResponse(context.Background(), "conversation-42", input, &resp)
		o := outputs[0].OfFunctionCallOutput
		fmt.Println(o.CallID.Value, o.Output.OfString.Value, results[0].Source)
	}
	// Output:
	// call_7 {"sent":true} executed
	// call_7 {"sent":true} replayed
}

// The turn is the count of user messages; tool messages are not one.
func ExampleChatUserTurn() {
	history := []sdk.ChatCompletionMessageParamUnion{
		sdk.SystemMessage("You are a billing agent."),
		sdk.UserMessage("Charge me $49."),
		sdk.ToolMessage(`{"id":"ch_1"}`, "call_1"),
	}
	fmt.Println(openai.ChatUserTurn(history))
	history = append(history, sdk.AssistantMessage("Charged."), sdk.UserMessage("Now refund it."))
	fmt.Println(openai.ChatUserTurn(history))
	// Output:
	// 1
	// 2
}

// The turn is the count of user message items; function call outputs are
// not one.
func ExampleResponseUserTurn() {
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Charge me $49.", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(`{"amount":4900}`, "call_1", "charge_card"),
		responses.ResponseInputItemParamOfFunctionCallOutput(`{"id":"ch_1"}`),
	}
	fmt.Println(openai.ResponseUserTurn(input))
	// Output:
	// 1
}

// ChatTools and ResponseTools give each registered tool's name,
// description and parameters: for a Typed tool, the JSON Schema of its Go
// input type.
func ExampleAdapter_ChatTools() {
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
	a := openai.New(h, nil)
	chat, _ := json.Marshal(a.ChatTools())
	resp, _ := json.Marshal(a.ResponseTools())
	fmt.Println(string(chat))
	fmt.Println(string(resp))
	// Output:
	// [{"function":{"name":"lookup_order","description":"Looks an order up by id.","parameters":{"additionalProperties":false,"properties":{"id":{"description":"the order's id","type":"string"}},"required":["id"],"type":"object"}},"type":"function"}]
	// [{"strict":false,"parameters":{"additionalProperties":false,"properties":{"id":{"description":"the order's id","type":"string"}},"required":["id"],"type":"object"},"name":"lookup_order","description":"Looks an order up by id.","type":"function"}]
}
