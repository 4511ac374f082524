package eino_test

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

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// A react agent whose model asks for the same charge twice in one
// response: the middleware runs both calls through the harness, and the
// payment API charges once.
func ExampleAdapter_Middleware() {
	dir, _ := os.MkdirTemp("", "agentonce-eino")
	defer os.RemoveAll(dir)
	payments, _ := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"ch_1"}`)
	}), nil)
	api := httptest.NewServer(payments)
	defer api.Close()

	client := &http.Client{Transport: &downstream.Transport{}} // sends the call's Idempotency-Key
	charge, _ := utils.InferTool("charge_card", "Charges the card.", func(ctx context.Context, in struct{ Cents int }) (json.RawMessage, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", api.URL+"/charges", strings.NewReader(fmt.Sprint(in.Cents)))
		return downstream.ReadJSON(client.Do(req))
	})

	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	a := eino.New(h, &eino.Options{Tools: map[string]harness.Tool{"charge_card": {Effect: journal.Keyed}}})

	agent, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: twiceModel{},
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{charge},
			ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	out, err := agent.Generate(eino.WithSession(context.Background(), "conversation-42", msgs), msgs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("model:", out.Content)
	fmt.Println("charges:", payments.TotalEffects())
	// Output:
	// model: Charged: {"id":"ch_1"} {"id":"ch_1"}
	// charges: 1
}

// twiceModel stands in for an LLM: it asks for the same charge twice,
// then repeats the tool results it read.
type twiceModel struct{}

func (twiceModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if last := in[len(in)-1]; last.Role == schema.Tool {
		return schema.AssistantMessage("Charged: "+in[len(in)-2].Content+" "+last.Content, nil), nil
	}
	call := func(id string) schema.ToolCall {
		return schema.ToolCall{ID: id, Function: schema.FunctionCall{Name: "charge_card", Arguments: `{"Cents":4900}`}}
	}
	return schema.AssistantMessage("", []schema.ToolCall{call("call_1"), call("call_2")}), nil
}

func (m twiceModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{msg}), err
}

func (m twiceModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// UserTurn counts the user's messages; tool results are not one.
func ExampleUserTurn() {
	history := []*schema.Message{
		schema.UserMessage("Charge me $49."),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Function: schema.FunctionCall{Name: "charge_card"}}}),
		schema.ToolMessage(`{"id":"ch_1"}`, "call_1"),
	}
	fmt.Println(eino.UserTurn(history))
	history = append(history, schema.AssistantMessage("Charged.", nil), schema.UserMessage("Now refund it."))
	fmt.Println(eino.UserTurn(history))
	// Output:
	// 1
	// 2
}
