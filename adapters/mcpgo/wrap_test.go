package mcpgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// shop is an existing mcp-go server, written as mcp-go's documentation
// writes one, whose handlers count their side effects: refund refunds,
// and send sends a message but loses the answer of its first call.
type shop struct {
	s              *server.MCPServer
	refunds, sends atomic.Int64
}

func newShop() *shop {
	sh := &shop{s: server.NewMCPServer("shop", "1.0.0")}
	sh.s.AddTool(mcp.NewTool("refund",
		mcp.WithDescription("Refund an order, in full or in part."),
		mcp.WithString("order", mcp.Required(), mcp.Description("The order id.")),
		mcp.WithNumber("amount", mcp.Required(), mcp.Description("The amount in cents.")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := sh.refunds.Add(1)
		return mcp.NewToolResultText(fmt.Sprintf("refund re_%d of %s", n, req.GetString("order", ""))), nil
	})
	sh.s.AddTool(mcp.NewTool("send",
		mcp.WithDescription("Send the customer a message."),
		mcp.WithString("text", mcp.Required()),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if sh.sends.Add(1) == 1 {
			return nil, errors.New("connection reset after the message was handed over")
		}
		return mcp.NewToolResultText("sent"), nil
	})
	return sh
}

// serveWrapped wraps the shop's tools with opts and serves it over mcp-go's
// streamable HTTP behind bearer tokens.
func serveWrapped(t *testing.T, sh *shop, opts *mcpgo.Options) string {
	t.Helper()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	opts.Identity = mcpgo.BearerIdentity(verify)
	if err := mcpgo.Wrap(sh.s, h, opts); err != nil {
		t.Fatal(err)
	}
	hs, err := mcpgo.HTTPServer(sh.s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hs)
	t.Cleanup(srv.Close)
	return srv.URL
}

func callIn(t *testing.T, c interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, tool string, args map[string]any, turn string) *mcp.CallToolResult {
	t.Helper()
	var r mcp.CallToolRequest
	r.Params.Name, r.Params.Arguments = tool, args
	if turn != "" {
		r.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{
			"io.github.agentonce/session": "conv-1", "io.github.agentonce/turn": turn}}
	}
	res, err := c.CallTool(context.Background(), r)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

func status(r *mcp.CallToolResult) string {
	if r.Meta == nil {
		return ""
	}
	s, _ := r.Meta.AdditionalFields["io.github.agentonce/status"].(string)
	return s
}

// Wrapping leaves tools/list as the server wrote it: each tool's schema
// and description as mcp-go built them.
func TestWrapKeepsToolList(t *testing.T) {
	sh := newShop()
	want := map[string]mcp.Tool{}
	for name, st := range sh.s.ListTools() {
		want[name] = st.Tool
	}
	c := connect(t, serveWrapped(t, sh, &mcpgo.Options{}), "tok-alice")
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(want) {
		t.Fatalf("tools/list has %d tools; want %d", len(list.Tools), len(want))
	}
	for _, got := range list.Tools {
		w := want[got.Name]
		gs, _ := json.Marshal(got.InputSchema)
		ws, _ := json.Marshal(w.InputSchema)
		if string(gs) != string(ws) || got.Description != w.Description {
			t.Errorf("tools/list %s: schema %s, description %q; want %s, %q", got.Name, gs, got.Description, ws, w.Description)
		}
	}
}

// A wrapped tool called twice with the same input in the same turn runs
// once, and the repeat is answered with the first result; a new turn is a
// new intent.
func TestWrapRunsOnce(t *testing.T) {
	sh := newShop()
	c := connect(t, serveWrapped(t, sh, &mcpgo.Options{}), "tok-alice")
	args := map[string]any{"order": "A-17", "amount": 4900}
	first := callIn(t, c, "refund", args, "1")
	again := callIn(t, c, "refund", args, "1")
	if first.IsError || text(first) != "refund re_1 of A-17" || source(first) != "executed" {
		t.Errorf("first call: IsError %v, text %q, source %q; want refund re_1, executed", first.IsError, text(first), source(first))
	}
	if again.IsError || text(again) != text(first) || source(again) != "replayed" {
		t.Errorf("repeat: IsError %v, text %q, source %q; want the first result, replayed", again.IsError, text(again), source(again))
	}
	if n := sh.refunds.Load(); n != 1 {
		t.Errorf("refunds = %d; want 1", n)
	}
	if res := callIn(t, c, "refund", args, "2"); text(res) != "refund re_2 of A-17" || sh.refunds.Load() != 2 {
		t.Errorf("next turn: text %q, refunds %d; want a second refund", text(res), sh.refunds.Load())
	}
}

// Effect kinds apply per tool: send, Unkeyed by default, lost its first
// answer, so it is unknown and not sent again; the same tool declared
// Idempotent is run again and succeeds.
func TestWrapEffectKinds(t *testing.T) {
	for _, c := range []struct {
		effects    map[string]journal.Effect
		wantStatus string
		wantSends  int64
	}{
		{nil, "unknown", 1},
		{map[string]journal.Effect{"send": journal.Idempotent}, "succeeded", 2},
	} {
		t.Run(c.wantStatus, func(t *testing.T) {
			sh := newShop()
			cl := connect(t, serveWrapped(t, sh, &mcpgo.Options{Effects: c.effects}), "tok-alice")
			args := map[string]any{"text": "Your refund is on its way."}
			callIn(t, cl, "send", args, "1")
			res := callIn(t, cl, "send", args, "1")
			if status(res) != c.wantStatus || res.IsError != (c.wantStatus != "succeeded") {
				t.Errorf("second call: status %q, IsError %v, text %q; want %s", status(res), res.IsError, text(res), c.wantStatus)
			}
			if n := sh.sends.Load(); n != c.wantSends {
				t.Errorf("sends = %d; want %d", n, c.wantSends)
			}
		})
	}
}

// A misspelt tool in Options.Effects is an error naming it, and nothing is
// wrapped.
func TestWrapUnknownEffect(t *testing.T) {
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = mcpgo.Wrap(newShop().s, h, &mcpgo.Options{Effects: map[string]journal.Effect{"refnud": journal.Keyed}})
	if err == nil || !strings.Contains(err.Error(), `"refnud"`) || !strings.Contains(err.Error(), "refund, send") {
		t.Errorf("Wrap(Effects: refnud) = %v; want an error naming refnud and the server's tools", err)
	}
	if n := len(h.Tools()); n != 0 {
		t.Errorf("harness tools after a failed Wrap = %d; want 0", n)
	}
}

// A harness tool made with harness.Typed is offered with the schema of its
// Go input type and its description; a tool with neither is warned of.
func TestAddToolsDerivesSchema(t *testing.T) {
	type refundIn struct {
		Order  string `json:"order" jsonschema:"the order id"`
		Amount int    `json:"amount"`
	}
	typed := harness.Typed("refund", journal.Keyed, func(context.Context, refundIn) (string, error) { return "ok", nil })
	typed.Description = "Refund an order."
	bare := harness.Tool{Name: "ping", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }}
	var logged strings.Builder
	h := newMemHarness(t, typed, bare)
	s := server.NewMCPServer("t", "v0")
	if err := mcpgo.AddTools(s, h, &mcpgo.Options{Logger: slogTo(&logged)}); err != nil {
		t.Fatal(err)
	}
	d := s.GetTool("refund").Tool
	var schema struct {
		Properties map[string]struct {
			Type, Description string
		}
	}
	if err := json.Unmarshal(d.RawInputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if p := schema.Properties; p["order"].Type != "string" || p["order"].Description != "the order id" || p["amount"].Type != "integer" || d.Description != "Refund an order." {
		t.Errorf("refund offered as %s, %q; want order and amount from refundIn and its description", d.RawInputSchema, d.Description)
	}
	if _, ok := schema.Properties["agentonce_repeat"]; !ok {
		t.Errorf("refund schema %s has no agentonce_repeat", d.RawInputSchema)
	}
	if l := logged.String(); !strings.Contains(l, "tool=ping") || !strings.Contains(l, "no input schema") || !strings.Contains(l, "no description") || strings.Contains(l, "tool=refund") {
		t.Errorf("warnings = %q; want ping's missing schema and description, none for refund", l)
	}
}

func newMemHarness(t *testing.T, tools ...harness.Tool) *harness.Harness {
	t.Helper()
	h := harness.New(memory.New(nil), nil)
	t.Cleanup(func() { h.Close() })
	if err := h.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return h
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
