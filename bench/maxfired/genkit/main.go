// Command genkit is bench/maxfired's worker for Firebase Genkit (Go),
// built and run by the sweep: genkit's prompt library and
// anthropic-sdk-go need different versions of invopop/jsonschema, so it
// is a module of its own with a workspace of its own.
//
//	genkit worker -runtime genkit -mode plain|once -dir DIR -pay URL -intent ID [-crash N|effect]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
	"github.com/agentonce/agentonce/harness"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "worker" {
		fmt.Fprintln(os.Stderr, "usage: genkit worker -runtime genkit -mode plain|once -dir DIR -pay URL -intent ID [-crash N|effect]")
		os.Exit(2)
	}
	worker.Main(os.Args[2:], []worker.Runtime{{Name: "genkit", Plain: plain, Once: once}})
}

func plain(ctx context.Context, j worker.Job) (worker.Outcome, error) {
	g := genkit.Init(ctx)
	tool := genkit.DefineTool(g, "charge", "Charges the customer.", func(tc *ai.ToolContext, in worker.ChargeInput) (json.RawMessage, error) {
		return worker.DoCharge(tc, j.Pay, in)
	})
	answer, err := generate(ctx, g, tool, j)
	return worker.Outcome{Status: "charged", Detail: answer}, err
}

func once(ctx context.Context, j worker.Job) (worker.Outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return worker.Outcome{}, err
	}
	defer h.Close()
	g := genkit.Init(ctx)
	a := agentgenkit.New(h, nil)
	tool := agentgenkit.DefineTool(g, a, worker.ChargeTool(j), func(tc *ai.ToolContext, in worker.ChargeInput) (json.RawMessage, error) {
		return worker.DoCharge(tc, j.Pay, in)
	})
	answer, err := generate(harness.WithScope(ctx, j.Intent, "1"), g, tool, j)
	return worker.OnceOutcome(answer), err
}

// generate runs the user's turn with a model that asks for the charge,
// then answers; it returns the tool's output the model read.
func generate(ctx context.Context, g *genkit.Genkit, tool ai.Tool, j worker.Job) (string, error) {
	var mu sync.Mutex
	var read string
	m := genkit.DefineModel(g, "maxfired/scripted", &ai.ModelOptions{
		Supports: &ai.ModelSupports{Multiturn: true, Tools: true},
	}, func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == ai.RoleTool {
			for _, p := range last.Content {
				if p.IsToolResponse() {
					b, _ := json.Marshal(p.ToolResponse.Output)
					mu.Lock()
					read = string(b)
					mu.Unlock()
				}
			}
			return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage("Done."), FinishReason: ai.FinishReasonStop}, nil
		}
		var input map[string]any
		json.Unmarshal([]byte(worker.ChargeArgs(j.Intent)), &input)
		msg := ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: "charge", Ref: "call_1", Input: input}))
		return &ai.ModelResponse{Request: req, Message: msg, FinishReason: ai.FinishReasonStop}, nil
	})
	_, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithTools(tool), ai.WithPrompt("Charge me $49."))
	mu.Lock()
	defer mu.Unlock()
	return read, err
}
