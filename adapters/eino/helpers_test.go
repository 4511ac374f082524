package eino_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

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

// scriptedModel is an eino ToolCallingChatModel that answers by script
// and keeps every input it was given, so a test can assert on what the
// model read.
type scriptedModel struct {
	reply func(n int, input []*schema.Message) *schema.Message

	mu     sync.Mutex // guards inputs
	inputs [][]*schema.Message
}

func (m *scriptedModel) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	m.inputs = append(m.inputs, append([]*schema.Message(nil), input...))
	n := len(m.inputs)
	m.mu.Unlock()
	return m.reply(n, input), nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// input returns the model's n-th input, from 1.
func (m *scriptedModel) input(t *testing.T, n int) []*schema.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.inputs) < n {
		t.Fatalf("the model was called %d times; want at least %d", len(m.inputs), n)
	}
	return m.inputs[n-1]
}

// toolResults returns the tool messages at the end of input.
func toolResults(input []*schema.Message) []*schema.Message {
	i := len(input)
	for i > 0 && input[i-1].Role == schema.Tool {
		i--
	}
	return input[i:]
}

func callCharge(id, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: "charge_card", Arguments: args}}
}

func toolCalls(calls ...schema.ToolCall) *schema.Message {
	return schema.AssistantMessage("", calls)
}

// shop is the payment API the charge tool calls: a real loopback server
// behind an agentoncetest.Downstream, which counts the charges it made.
type shop struct {
	*agentoncetest.Server
	n atomic.Int64
}

func newShop(t *testing.T) *shop {
	s := &shop{}
	s.Server = agentoncetest.NewServer(t, http.HandlerFunc(s.charge), nil)
	return s
}

func (s *shop) charge(w http.ResponseWriter, r *http.Request) {
	var in chargeInput
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"ch_%d","amount":%d}`, s.n.Add(1), in.Amount)
}

type chargeInput struct {
	Amount   int    `json:"amount"`
	Currency string `json:"currency"`
}

type charge struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// chargeTool is an eino tool made the usual way (utils.InferTool) that
// POSTs to the shop with a client whose Transport carries the harness's
// idempotency key. base sits under it (nil: http.DefaultTransport), for
// faults.
func chargeTool(t testing.TB, url string, base http.RoundTripper) tool.InvokableTool {
	client := &http.Client{Transport: &downstream.Transport{Base: base}}
	ct, err := utils.InferTool("charge_card", "Charges the customer's card.", func(ctx context.Context, in chargeInput) (charge, error) {
		b, _ := json.Marshal(in)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges", bytes.NewReader(b))
		if err != nil {
			return charge{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		out, err := downstream.ReadJSON(client.Do(req))
		if err != nil {
			return charge{}, err
		}
		var c charge
		return c, json.Unmarshal(out, &c)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// keyed is the adapter's setting for the charge tool: the shop honours
// Idempotency-Key.
var keyed = &eino.Options{Tenant: "acme", Tools: map[string]harness.Tool{"charge_card": {Effect: journal.Keyed}}}

func openHarness(t testing.TB, path string) *harness.Harness {
	t.Helper()
	h, err := agentonce.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func journalPath(t testing.TB) string { return filepath.Join(t.TempDir(), "agent.journal") }

// newAgent is eino's react agent with the adapter's middleware on its
// tools node: the protected agent.
func newAgent(t testing.TB, m model.ToolCallingChatModel, a *eino.Adapter, tools ...tool.BaseTool) *react.Agent {
	t.Helper()
	agent, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               tools,
			ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return agent
}
