package genkit_test

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

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentonce/agentonce"
	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// scriptedModel is a genkit model (genkit.DefineModel) that answers by
// script and keeps every request it was given, so a test can assert on
// what the model read.
type scriptedModel struct {
	reply func(n int, req *ai.ModelRequest) *ai.Message

	mu   sync.Mutex          // guards read
	read []map[string]string // per request, the tool outputs it ended with
}

func (m *scriptedModel) define(g *genkit.Genkit) ai.Model {
	return genkit.DefineModel(g, "test/scripted", &ai.ModelOptions{
		Supports: &ai.ModelSupports{Multiturn: true, Tools: true, SystemRole: true},
	}, func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		m.mu.Lock()
		// genkit appends to the request's messages afterwards: keep what
		// the model read now.
		m.read = append(m.read, lastToolOutputs(req))
		n := len(m.read)
		m.mu.Unlock()
		return &ai.ModelResponse{Request: req, Message: m.reply(n, req), FinishReason: ai.FinishReasonStop}, nil
	})
}

// toolOutputs returns, as JSON, the tool responses the model read in its
// n-th request (from 1), by ref.
func (m *scriptedModel) toolOutputs(t *testing.T, n int) map[string]string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.read) < n {
		t.Fatalf("the model was called %d times; want at least %d", len(m.read), n)
	}
	return m.read[n-1]
}

func lastToolOutputs(req *ai.ModelRequest) map[string]string {
	out := map[string]string{}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != ai.RoleTool {
		return out
	}
	for _, p := range last.Content {
		if p.IsToolResponse() {
			b, _ := json.Marshal(p.ToolResponse.Output)
			out[p.ToolResponse.Ref] = string(b)
		}
	}
	return out
}

func readTool(req *ai.ModelRequest) bool {
	return req.Messages[len(req.Messages)-1].Role == ai.RoleTool
}

func chargeRequest(refs ...string) *ai.Message {
	parts := make([]*ai.Part, len(refs))
	for i, ref := range refs {
		parts[i] = ai.NewToolRequestPart(&ai.ToolRequest{Name: "charge_card", Ref: ref, Input: map[string]any{"amount": 4900, "currency": "usd"}})
	}
	return ai.NewModelMessage(parts...)
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

// ch1 is the first charge as the model reads it (genkit hands the model
// the output as a map, which encodes with sorted keys).
const ch1 = `{"amount":4900,"id":"ch_1"}`

// agent is a genkit instance with the scripted model and the protected
// charge tool.
type agent struct {
	g     *genkit.Genkit
	model ai.Model
	tool  *ai.ToolDef[chargeInput, any]
}

// newAgent defines the charge tool, which POSTs to url with a client
// whose Transport carries the harness's idempotency key (base under it,
// nil for none). With approval the tool first asks the user
// (ToolContext.Interrupt) and charges when restarted.
func newAgent(t testing.TB, m *scriptedModel, h *harness.Harness, url string, base http.RoundTripper, approval bool) *agent {
	g := genkit.Init(context.Background())
	a := agentgenkit.New(h, &agentgenkit.Options{Tenant: "acme"})
	client := &http.Client{Transport: &downstream.Transport{Base: base}}
	tool := agentgenkit.DefineTool(g, a, harness.Tool{Name: "charge_card", Description: "Charges the card.", Effect: journal.Keyed},
		func(tc *ai.ToolContext, in chargeInput) (charge, error) {
			if approval && !tc.IsResumed() {
				return charge{}, tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"ask": "Charge $49?"}})
			}
			b, _ := json.Marshal(in)
			req, err := http.NewRequestWithContext(tc, http.MethodPost, url+"/charges", bytes.NewReader(b))
			if err != nil {
				return charge{}, err
			}
			out, err := downstream.ReadJSON(client.Do(req))
			if err != nil {
				return charge{}, err
			}
			var c charge
			return c, json.Unmarshal(out, &c)
		})
	return &agent{g: g, model: m.define(g), tool: tool}
}

// generate runs one user turn's generation with the charge tool.
func (a *agent) generate(ctx context.Context, opts ...ai.GenerateOption) (*ai.ModelResponse, error) {
	return genkit.Generate(ctx, a.g, append([]ai.GenerateOption{ai.WithModel(a.model), ai.WithTools(a.tool)}, opts...)...)
}

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
