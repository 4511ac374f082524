// Command agent is an eino react agent whose tools go through agentonce,
// offline: a scripted model stands in for the LLM, and two loopback APIs
// (payments, which honours Idempotency-Key, and email, which does not)
// count the side effects they really performed. The model asks for one
// charge twice in parallel and again after its answer is lost, and sends
// a receipt twice; the run ends by counting duplicates.
//
//	go run ./adapters/eino/examples/agent
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"

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

func main() {
	path := flag.String("journal", "", "journal file (default: a new one in a temporary directory)")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "agentonce-eino-agent")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*path = filepath.Join(dir, "agent.journal")
	}
	if err := run(context.Background(), os.Stdout, *path); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, path string) error {
	var charges, mails atomic.Int64
	payments, err := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":"ch_%d","status":"succeeded"}`, charges.Add(1))
	}), nil)
	if err != nil {
		return err
	}
	email, err := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"message":"m_%d"}`, mails.Add(1))
	}), &agentoncetest.DownstreamOptions{Passthrough: true}) // no idempotency: only counts
	if err != nil {
		return err
	}
	payAPI, mailAPI := httptest.NewServer(payments), httptest.NewServer(email)
	defer payAPI.Close()
	defer mailAPI.Close()

	// The charge's first answer is lost after the payment API charged.
	faults := agentoncetest.NewFaultTransport(nil, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{agentoncetest.LoseResponse}})
	client := &http.Client{Transport: &downstream.Transport{Base: faults}}
	post := func(ctx context.Context, url string, body any) (json.RawMessage, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return downstream.ReadJSON(client.Do(req))
	}
	type chargeInput struct {
		Order string `json:"order"`
		Cents int    `json:"cents"`
	}
	type receiptInput struct {
		Order string `json:"order"`
		To    string `json:"to"`
	}
	charge, err := utils.InferTool("charge_card", "Charges the customer's card for an order.",
		func(ctx context.Context, in chargeInput) (json.RawMessage, error) {
			return post(ctx, payAPI.URL+"/charges", in)
		})
	if err != nil {
		return err
	}
	receipt, err := utils.InferTool("send_receipt", "Emails the receipt of an order.",
		func(ctx context.Context, in receiptInput) (json.RawMessage, error) {
			return post(ctx, mailAPI.URL+"/send", in)
		})
	if err != nil {
		return err
	}

	// The protection: a journal, the tools' effect kinds, the middleware.
	h, err := agentonce.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	a := eino.New(h, &eino.Options{Tenant: "acme", Tools: map[string]harness.Tool{
		"charge_card":  {Effect: journal.Keyed},   // the payment API deduplicates by key
		"send_receipt": {Effect: journal.Unkeyed}, // the email API does not
	}})
	m := &scriptedModel{w: w}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{charge, receipt},
			ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
		},
	})
	if err != nil {
		return err
	}

	var history []*schema.Message
	for _, text := range []string{"Charge 49.00 USD for order A-1001.", "Email me the receipt, please."} {
		fmt.Fprintf(w, "user  > %s\n", text)
		history = append(history, schema.UserMessage(text))
		out, err := agent.Generate(eino.WithSession(ctx, "demo", history), history)
		if err != nil {
			return err
		}
		history = append(history, out)
		fmt.Fprintf(w, "model > %s\n\n", out.Content)
	}

	effects := payments.TotalEffects() + email.TotalEffects()
	dups := payments.Duplicates() + email.Duplicates()
	fmt.Fprintf(w, "faults injected: %d (lose-response)\n", faults.Injected(agentoncetest.LoseResponse))
	fmt.Fprintf(w, "side effects at the APIs: %d (charges %d, emails %d); duplicate side effects: %d\n",
		effects, payments.TotalEffects(), email.TotalEffects(), dups)
	return nil
}

// scriptedModel stands in for the LLM. In the first turn it asks for the
// charge twice in one response, then once more, unsure of the answer; in
// the second it sends the receipt and, asked nothing new, sends it again.
type scriptedModel struct {
	w     io.Writer
	round int
}

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.round++
	last := in[len(in)-1]
	for _, t := range toolResults(in) {
		fmt.Fprintf(m.w, "tool  < %s %s\n", t.ToolCallID, t.Content)
	}
	call := func(id, name, args string) schema.ToolCall {
		fmt.Fprintf(m.w, "model > %s %s %s\n", id, name, args)
		return schema.ToolCall{ID: id, Function: schema.FunctionCall{Name: name, Arguments: args}}
	}
	const chargeArgs, receiptArgs = `{"order":"A-1001","cents":4900}`, `{"order":"A-1001","to":"ada@example.com"}`
	switch {
	case m.round == 1:
		return schema.AssistantMessage("", []schema.ToolCall{
			call("call_1", "charge_card", chargeArgs), call("call_2", "charge_card", chargeArgs)}), nil
	case m.round == 2:
		return schema.AssistantMessage("", []schema.ToolCall{call("call_3", "charge_card", chargeArgs)}), nil
	case m.round == 3:
		return schema.AssistantMessage("Order A-1001 is charged 49.00 USD.", nil), nil
	case last.Role == schema.User:
		return schema.AssistantMessage("", []schema.ToolCall{call("call_4", "send_receipt", receiptArgs)}), nil
	case m.round == 5:
		return schema.AssistantMessage("", []schema.ToolCall{call("call_5", "send_receipt", receiptArgs)}), nil
	}
	return schema.AssistantMessage("The receipt is on its way to ada@example.com.", nil), nil
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{msg}), err
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// toolResults returns the tool messages at the end of in.
func toolResults(in []*schema.Message) []*schema.Message {
	i := len(in)
	for i > 0 && in[i-1].Role == schema.Tool {
		i--
	}
	return in[i:]
}
