package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

type refundIn struct {
	Order  string `json:"order" jsonschema:"the order id"`
	Amount int    `json:"amount" jsonschema:"the amount in cents"`
}

type sendIn struct {
	Text string `json:"text"`
}

// shop is an existing go-sdk server, its tools added as the SDK's
// documentation adds them, whose handlers count their side effects: refund
// refunds, and send sends a message but loses the answer of its first
// call (the SDK makes the error a result with IsError).
type shop struct {
	s              *sdk.Server
	refunds, sends atomic.Int64
}

func newShop() *shop {
	sh := &shop{s: sdk.NewServer(&sdk.Implementation{Name: "shop", Version: "1.0.0"}, nil)}
	sdk.AddTool(sh.s, &sdk.Tool{Name: "refund", Description: "Refund an order, in full or in part."},
		func(_ context.Context, _ *sdk.CallToolRequest, in refundIn) (*sdk.CallToolResult, any, error) {
			n := sh.refunds.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("refund re_%d of %s", n, in.Order)}}}, nil, nil
		})
	sdk.AddTool(sh.s, &sdk.Tool{Name: "send", Description: "Send the customer a message."},
		func(context.Context, *sdk.CallToolRequest, sendIn) (*sdk.CallToolResult, any, error) {
			if sh.sends.Add(1) == 1 {
				return nil, nil, errors.New("connection reset after the message was handed over")
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sent"}}}, nil, nil
		})
	return sh
}

// serveWrapped wraps the shop's tools with opts and serves it over the
// SDK's streamable HTTP behind bearer tokens; connect with connectAs.
func serveWrapped(t *testing.T, sh *shop, opts *agentmcp.Options) *fixture {
	t.Helper()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	opts.Identity = agentmcp.TokenIdentity("org")
	if err := agentmcp.Wrap(sh.s, h, opts); err != nil {
		t.Fatal(err)
	}
	handler, err := agentmcp.HTTPHandler(sh.s, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	t.Cleanup(srv.Close)
	return &fixture{h: h, url: srv.URL}
}

func callIn(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, turn string) *sdk.CallToolResult {
	t.Helper()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	if turn != "" {
		agentmcp.SetScope(p, agentmcp.Scope{Session: "conv-1", Turn: turn})
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

// Wrapping leaves tools/list as the server wrote it: each tool's schema
// (the SDK's, from the handler's input type) and description.
func TestWrapKeepsToolList(t *testing.T) {
	sh := newShop()
	want := listed(t, sh.s)
	got := listed(t, serveWrapped(t, sh, &agentmcp.Options{}).connectAs(t, "", "tok-alice"))
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("tools/list has %d tools, %d before wrapping; want 2", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("tools/list %s = %s; want %s as before wrapping", name, got[name], w)
		}
	}
	if !strings.Contains(want["refund"], "the order id") {
		t.Errorf("refund listed as %s; want its schema", want["refund"])
	}
}

// listed is each tool's description and input schema as a client lists
// them; src is a server (listed in memory) or a client session.
func listed(t *testing.T, src any) map[string]string {
	t.Helper()
	cs, ok := src.(*sdk.ClientSession)
	if !ok {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := src.(*sdk.Server).Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		if cs, err = sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil); err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
	}
	out := map[string]string{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		out[tool.Name] = tool.Description + " " + string(schema)
	}
	return out
}

// A wrapped tool called twice with the same input in the same turn runs
// once, and the repeat is answered with the first result; a new turn is a
// new intent.
func TestWrapRunsOnce(t *testing.T) {
	sh := newShop()
	cs := serveWrapped(t, sh, &agentmcp.Options{}).connectAs(t, "", "tok-alice")
	args := map[string]any{"order": "A-17", "amount": 4900}
	first := callIn(t, cs, "refund", args, "1")
	again := callIn(t, cs, "refund", args, "1")
	if first.IsError || text(first) != "refund re_1 of A-17" || metaOf(first, agentmcp.MetaSource) != "executed" {
		t.Errorf("first call: IsError %v, text %q, source %q; want refund re_1, executed", first.IsError, text(first), metaOf(first, agentmcp.MetaSource))
	}
	if again.IsError || text(again) != text(first) || metaOf(again, agentmcp.MetaSource) != "replayed" {
		t.Errorf("repeat: IsError %v, text %q, source %q; want the first result, replayed", again.IsError, text(again), metaOf(again, agentmcp.MetaSource))
	}
	if n := sh.refunds.Load(); n != 1 {
		t.Errorf("refunds = %d; want 1", n)
	}
	if res := callIn(t, cs, "refund", args, "2"); text(res) != "refund re_2 of A-17" || sh.refunds.Load() != 2 {
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
			cs := serveWrapped(t, sh, &agentmcp.Options{Effects: c.effects}).connectAs(t, "", "tok-alice")
			args := map[string]any{"text": "Your refund is on its way."}
			callIn(t, cs, "send", args, "1")
			res := callIn(t, cs, "send", args, "1")
			if st := metaOf(res, agentmcp.MetaStatus); st != c.wantStatus || res.IsError != (c.wantStatus != "succeeded") {
				t.Errorf("second call: status %q, IsError %v, text %q; want %s", st, res.IsError, text(res), c.wantStatus)
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
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	err := agentmcp.Wrap(newShop().s, h, &agentmcp.Options{Effects: map[string]journal.Effect{"refnud": journal.Keyed}})
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
	typed := harness.Typed("refund", journal.Keyed, func(context.Context, refundIn) (string, error) { return "ok", nil })
	typed.Description = "Refund an order."
	bare := harness.Tool{Name: "ping", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }}
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	if err := h.Register(typed, bare); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "v0"}, nil)
	if err := agentmcp.AddTools(s, h, &agentmcp.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}); err != nil {
		t.Fatal(err)
	}
	l := listed(t, s)["refund"]
	for _, want := range []string{"Refund an order.", `"order":{"description":"the order id","type":"string"}`, `"amount":{"description":"the amount in cents","type":"integer"}`, `"agentonce_repeat"`} {
		if !strings.Contains(l, want) {
			t.Errorf("refund listed as %s; want %s in it", l, want)
		}
	}
	if l := logged.String(); !strings.Contains(l, "tool=ping") || !strings.Contains(l, "no input schema") || !strings.Contains(l, "no description") || strings.Contains(l, "tool=refund") {
		t.Errorf("warnings = %q; want ping's missing schema and description, none for refund", l)
	}
}
