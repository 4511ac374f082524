package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// loseFirstAnswer lets the first tools/call reach the server and finish
// there, then loses its answer, as a connection that drops would.
type loseFirstAnswer struct {
	lost atomic.Bool
}

func (l *loseFirstAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !bytes.Contains(body, []byte(`"tools/call"`)) || !l.lost.CompareAndSwap(false, true) {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body) // the server answered in full
	resp.Body.Close()
	return nil, errors.New("connection reset by peer")
}

func agentHarness(t *testing.T) *harness.Harness {
	t.Helper()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// An agent on agentonce calls a tool of an MCP server on agentonce through
// ClientTools. The first answer is lost; the agent's harness retries with
// the same key, which the server keys the call by: one charge, answered
// from the server's journal, and the agent's model reads the charge.
func TestAgentToAgentonceServer(t *testing.T) {
	p := newPayments(t, false)
	f := newFixtureOpts(t, identified(), chargeTool(p))
	lose := &loseFirstAnswer{}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: f.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{"tok-alice", lose}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := agentmcp.ClientTools(context.Background(), cs, &agentmcp.ClientOptions{TrustAnnotations: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Effect != journal.Keyed {
		t.Fatalf("ClientTools = %d tools, effect %v; want charge_card, keyed (the server dedupes by the key)", len(tools), tools[0].Effect)
	}
	agent := agentHarness(t)
	if err := agent.Register(tools...); err != nil {
		t.Fatal(err)
	}
	call := harness.ToolCall{Tenant: "acme", Session: "conv-9", Turn: "1", Tool: "charge_card", Input: json.RawMessage(`{"amount":700}`)}
	res := agent.Call(context.Background(), call)
	if !lose.lost.Load() {
		t.Fatalf("no answer was lost; the test did not test")
	}
	if !res.OK() || !strings.Contains(res.ForModel(), `"charge_id":"ch_1"`) {
		t.Errorf("agent's result: %v %v, model reads %q; want the one charge", res.Status, res.Err, res.ForModel())
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	var sources []string
	for rec, err := range f.h.Store().List(context.Background(), journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, rec.State.String())
		// The agent's conversation names the server's record (under the
		// authenticated principal), so either side's agentctl finds it.
		if !strings.Contains(rec.Intent.Session, "conv-9") || rec.Intent.Turn != "1" {
			t.Errorf("server record's session, turn = %q, %q; want the agent's conv-9, 1", rec.Intent.Session, rec.Intent.Turn)
		}
	}
	if len(sources) != 1 {
		t.Errorf("server journal records = %v; want one intent", sources)
	}
	// The agent's own re-issue is answered from its journal, without the
	// server.
	if again := agent.Call(context.Background(), call); again.Source != harness.Replayed || p.charges.Load() != 1 {
		t.Errorf("re-issue: source %v, charges %d; want replayed, 1", again.Source, p.charges.Load())
	}
}

// A plain MCP server (no agentonce): configuration gives the effect kind
// and wins over the hints; without configuration or trust a tool is
// Unkeyed whatever it advertises; results reach the model as text.
func TestAgentToPlainServer(t *testing.T) {
	var sent atomic.Int64
	s := sdk.NewServer(&sdk.Implementation{Name: "plain", Version: "v0"}, nil)
	yes := true
	s.AddTool(&sdk.Tool{Name: "send_sms", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`),
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if strings.Contains(string(req.Params.Arguments), "nobody") {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such number"}}}, nil
			}
			sent.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "queued"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"balance":3}`}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	untrusted, err := agentmcp.ClientTools(context.Background(), cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range untrusted {
		if tool.Effect != journal.Unkeyed {
			t.Errorf("untrusted %s: effect %v; want unkeyed whatever the hints say", tool.Name, tool.Effect)
		}
	}
	tools, err := agentmcp.ClientTools(context.Background(), cs, &agentmcp.ClientOptions{
		TrustAnnotations: true, Prefix: "sms_", Effects: map[string]journal.Effect{"send_sms": journal.Unkeyed}})
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]journal.Effect{}
	for _, tool := range tools {
		effects[tool.Name] = tool.Effect
	}
	if effects["sms_send_sms"] != journal.Unkeyed || effects["sms_lookup"] != journal.ReadOnly {
		t.Errorf("effects = %v; want send_sms unkeyed (configured over its idempotentHint), lookup read-only (trusted hint)", effects)
	}
	agent := agentHarness(t)
	if err := agent.Register(tools...); err != nil {
		t.Fatal(err)
	}
	call := harness.ToolCall{Tenant: "acme", Session: "c", Turn: "1", Tool: "sms_send_sms", Input: json.RawMessage(`{"to":"+100"}`)}
	for range 2 {
		if res := agent.Call(context.Background(), call); !res.OK() || res.ForModel() != `"queued"` {
			t.Errorf("send_sms: %v %v, model reads %q; want \"queued\"", res.Status, res.Err, res.ForModel())
		}
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("messages sent = %d; want 1", n)
	}
	bad := agent.Call(context.Background(), harness.ToolCall{Tenant: "acme", Session: "c", Turn: "1", Tool: "sms_send_sms", Input: json.RawMessage(`{"to":"nobody"}`)})
	if bad.Status != harness.Failed || !strings.Contains(bad.ForModel(), "no such number") {
		t.Errorf("tool error: %v, model reads %q; want failed with the server's text", bad.Status, bad.ForModel())
	}
	look := agent.Call(context.Background(), harness.ToolCall{Tenant: "acme", Session: "c", Turn: "1", Tool: "sms_lookup", Input: json.RawMessage(`{}`)})
	if !look.OK() || look.ForModel() != `{"balance":3}` {
		t.Errorf("lookup: %v, model reads %q; want the JSON text", look.Status, look.ForModel())
	}
}

// An agent calls a tool of an agentonce MCP server that needs approval:
// the server runs nothing and answers awaiting-approval, which the agent
// records as not executed (never a failure it would answer forever); once
// a person approves on the server, the agent's re-issue runs it there,
// once.
func TestAgentToServerAwaitingApproval(t *testing.T) {
	p := newPayments(t, false)
	tool := chargeTool(p)
	tool.Approvals = 1
	f := newFixtureOpts(t, identified(), tool)
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: f.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{"tok-alice", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := agentmcp.ClientTools(context.Background(), cs, &agentmcp.ClientOptions{TrustAnnotations: true})
	if err != nil {
		t.Fatal(err)
	}
	agent := agentHarness(t)
	if err := agent.Register(tools...); err != nil {
		t.Fatal(err)
	}
	call := harness.ToolCall{Tenant: "acme", Session: "conv-5", Turn: "1", Tool: "charge_card", Input: json.RawMessage(`{"amount":700}`)}
	res := agent.Call(context.Background(), call)
	if res.OK() || !strings.Contains(res.ForModel(), "approv") || p.charges.Load() != 0 {
		t.Fatalf("before approval: %v %q, %d charges; want not run, saying it awaits approval", res.Status, res.ForModel(), p.charges.Load())
	}
	var waiting []journal.Record
	for rec, err := range f.h.Store().List(context.Background(), journal.Filter{State: journal.StateAwaiting}) {
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, rec)
	}
	if len(waiting) != 1 {
		t.Fatalf("server records awaiting approval = %d; want 1", len(waiting))
	}
	if _, err := f.h.Store().Resolve(context.Background(), waiting[0].Key, journal.Resolution{State: journal.StatePending,
		By: "ops", Fingerprint: waiting[0].Fingerprint}); err != nil {
		t.Fatal(err)
	}
	if again := agent.Call(context.Background(), call); !again.OK() || p.charges.Load() != 1 {
		t.Fatalf("re-issue after approval: %v %v, %d charges; want succeeded, 1", again.Status, again.Err, p.charges.Load())
	}
	if again := agent.Call(context.Background(), call); !again.OK() || again.Source != harness.Replayed || p.charges.Load() != 1 {
		t.Errorf("re-issue after the run: %v %v, %d charges; want replayed, 1", again.Status, again.Source, p.charges.Load())
	}
}
