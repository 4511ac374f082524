// Command agent is a genkit generation whose tools go through agentonce,
// offline: a scripted model (genkit.DefineModel) stands in for the LLM,
// and two loopback APIs (payments, which honours Idempotency-Key, and
// email, which does not) count the side effects they really performed.
// The model asks for one charge twice in parallel and again after its
// answer is lost, and sends a receipt twice; the run ends by counting
// duplicates.
//
//	cd adapters/genkit && go run ./examples/agent
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

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentonce/agentonce"
	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

func main() {
	path := flag.String("journal", "", "journal file (default: a new one in a temporary directory)")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "agentonce-genkit-agent")
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

type chargeInput struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

type receiptInput struct {
	Order string `json:"order"`
	To    string `json:"to"`
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

	// The protection: a journal, the adapter, and DefineTool from it with
	// each tool's effect kind.
	h, err := agentonce.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	g := genkit.Init(ctx)
	a := agentgenkit.New(h, &agentgenkit.Options{Tenant: "acme"})
	charge := agentgenkit.DefineTool(g, a,
		harness.Tool{Name: "charge_card", Description: "Charges the customer's card for an order.", Effect: journal.Keyed},
		func(tc *ai.ToolContext, in chargeInput) (json.RawMessage, error) {
			return post(tc, payAPI.URL+"/charges", in)
		})
	receipt := agentgenkit.DefineTool(g, a,
		harness.Tool{Name: "send_receipt", Description: "Emails the receipt of an order.", Effect: journal.Unkeyed},
		func(tc *ai.ToolContext, in receiptInput) (json.RawMessage, error) {
			return post(tc, mailAPI.URL+"/send", in)
		})
	m := &scriptedModel{w: w}
	llm := genkit.DefineModel(g, "demo/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}}, m.generate)

	var history []*ai.Message
	for _, text := range []string{"Charge 49.00 USD for order A-1001.", "Email me the receipt, please."} {
		fmt.Fprintf(w, "user  > %s\n", text)
		history = append(history, ai.NewUserTextMessage(text))
		resp, err := genkit.Generate(agentgenkit.WithSession(ctx, "demo", history), g,
			ai.WithModel(llm), ai.WithMessages(history...), ai.WithTools(charge, receipt))
		if err != nil {
			return err
		}
		history = resp.History()
		fmt.Fprintf(w, "model > %s\n\n", resp.Text())
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
	round int // genkit calls the model one round at a time
}

func (m *scriptedModel) generate(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	m.round++
	last := req.Messages[len(req.Messages)-1]
	if last.Role == ai.RoleTool {
		for _, p := range last.Content {
			b, _ := json.Marshal(p.ToolResponse.Output)
			fmt.Fprintf(m.w, "tool  < %s %s\n", p.ToolResponse.Ref, b)
		}
	}
	call := func(ref, name string, in any) *ai.Part {
		b, _ := json.Marshal(in)
		fmt.Fprintf(m.w, "model > %s %s %s\n", ref, name, b)
		return ai.NewToolRequestPart(&ai.ToolRequest{Name: name, Ref: ref, Input: in})
	}
	chargeArgs := map[string]any{"order": "A-1001", "cents": 4900}
	receiptArgs := map[string]any{"order": "A-1001", "to": "ada@example.com"}
	var msg *ai.Message
	switch {
	case m.round == 1:
		msg = ai.NewModelMessage(call("call_1", "charge_card", chargeArgs), call("call_2", "charge_card", chargeArgs))
	case m.round == 2:
		msg = ai.NewModelMessage(call("call_3", "charge_card", chargeArgs))
	case m.round == 3:
		msg = ai.NewModelTextMessage("Order A-1001 is charged 49.00 USD.")
	case last.Role == ai.RoleUser:
		msg = ai.NewModelMessage(call("call_4", "send_receipt", receiptArgs))
	case m.round == 5:
		msg = ai.NewModelMessage(call("call_5", "send_receipt", receiptArgs))
	default:
		msg = ai.NewModelTextMessage("The receipt is on its way to ada@example.com.")
	}
	return &ai.ModelResponse{Request: req, Message: msg, FinishReason: ai.FinishReasonStop}, nil
}
