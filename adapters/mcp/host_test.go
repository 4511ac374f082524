package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
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

func identified() *agentmcp.Options {
	return &agentmcp.Options{Identity: agentmcp.TokenIdentity("org")}
}

// A standard host sends no agentonce _meta, only its bearer token. It gives
// up on a slow charge, reconnects (a new client session) and sends the call
// again: one charge, and the model reads that the answer is the first
// call's and how to charge again on purpose, which then charges again.
func TestStandardHostRetryAfterReconnect(t *testing.T) {
	for _, version := range protocols {
		t.Run("protocol="+version, func(t *testing.T) {
			p := newPayments(t, true)
			f := newFixtureOpts(t, identified(), chargeTool(p))
			bare := &sdk.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": 4900}}

			cs1 := f.connectAs(t, version, "tok-alice")
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := cs1.CallTool(ctx, bare)
				first <- err
			}()
			wait(t, p.started, "the charge to start downstream")
			cancel()
			<-first
			f.awaitGiveUp(t, p)
			cs1.Close()

			cs2 := f.connectAs(t, version, "tok-alice")
			retry := make(chan *sdk.CallToolResult, 1)
			go func() {
				res, err := cs2.CallTool(context.Background(), bare)
				if err != nil {
					t.Errorf("retry after reconnect: %v", err)
				}
				retry <- res
			}()
			close(p.gate)
			res := <-retry
			if res == nil {
				return
			}
			if res.IsError || !strings.Contains(text(res), `"charge_id":"ch_1"`) {
				t.Errorf("retry: IsError %v, text %q; want the first charge", res.IsError, text(res))
			}
			if src := metaOf(res, agentmcp.MetaSource); src != "collapsed" && src != "replayed" {
				t.Errorf("retry source = %q; want collapsed or replayed", src)
			}
			if !strings.Contains(text(res), "was not done again") || !strings.Contains(text(res), agentmcp.RepeatArgument) {
				t.Errorf("retry text = %q; want it to say the charge was not done again and how to repeat", text(res))
			}
			if n := p.charges.Load(); n != 1 {
				t.Errorf("charges = %d; want 1", n)
			}
			again, err := cs2.CallTool(context.Background(), &sdk.CallToolParams{Name: "charge_card",
				Arguments: map[string]any{"amount": 4900, agentmcp.RepeatArgument: "2"}})
			if err != nil {
				t.Fatal(err)
			}
			if again.IsError || metaOf(again, agentmcp.MetaSource) != "executed" || p.charges.Load() != 2 {
				t.Errorf("deliberate repeat: IsError %v, source %q, charges %d; want a second executed charge",
					again.IsError, metaOf(again, agentmcp.MetaSource), p.charges.Load())
			}
		})
	}
}

// The tenant and principal come from the token: two users of one tenant
// who name the same session, turn and input are two intents, and neither
// reads the other's output; nor does a user of another tenant, nor a
// client that names a tenant in _meta.
func TestIdentityBindsEveryLevel(t *testing.T) {
	p := newPayments(t, false)
	f := newFixtureOpts(t, identified(), chargeTool(p))
	outputs := map[string]string{}
	for _, token := range []string{"tok-alice", "tok-bob", "tok-carol"} {
		cs := f.connectAs(t, "", token)
		res, err := cs.CallTool(context.Background(),
			chargeParams(agentmcp.Scope{Tenant: "acme", Session: "conv-1", Turn: "1"}, 100))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || metaOf(res, agentmcp.MetaSource) != "executed" {
			t.Errorf("%s: IsError %v, source %q (%s); want an executed charge of its own", token, res.IsError, metaOf(res, agentmcp.MetaSource), text(res))
		}
		outputs[token] = text(res)
	}
	if outputs["tok-alice"] == outputs["tok-bob"] || outputs["tok-alice"] == outputs["tok-carol"] || outputs["tok-bob"] == outputs["tok-carol"] {
		t.Errorf("outputs %v; want three distinct charges", outputs)
	}
	if n := p.charges.Load(); n != 3 {
		t.Errorf("charges = %d; want 3", n)
	}
	var tenants []string
	for rec, err := range f.h.Store().List(context.Background(), journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		tenants = append(tenants, rec.Intent.Tenant+" "+rec.Intent.Session)
	}
	want := map[string]bool{`acme "alice"/conv-1`: true, `acme "bob"/conv-1`: true, `beta "carol"/conv-1`: true}
	for _, got := range tenants {
		if !want[got] {
			t.Errorf("journal record of tenant and session %q; want one of %v", got, want)
		}
	}
	// No token: the SDK's middleware refuses before any tool.
	c := sdk.NewClient(&sdk.Implementation{Name: "anon", Version: "v0"}, nil)
	if _, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: f.url}, nil); err == nil {
		t.Errorf("Connect without a token = nil error; want 401")
	}
}

// On a network listener the adapter refuses to start without an identity
// unless told that it trusts its clients, and a handler served over HTTP
// some other way refuses every call instead.
func TestNetworkNeedsIdentity(t *testing.T) {
	var runs atomic.Int64
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Register(harness.Tool{Name: "note", Effect: journal.Keyed, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{}`), nil
	}})
	s := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "v0"}, nil)
	if err := agentmcp.AddTools(s, h, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := agentmcp.HTTPHandler(s, nil, nil); !errors.Is(err, agentmcp.ErrNoIdentity) {
		t.Errorf("HTTPHandler(no identity) = %v; want ErrNoIdentity", err)
	}
	if _, err := agentmcp.HTTPHandler(s, &agentmcp.Options{TrustClientScope: true}, nil); err != nil {
		t.Errorf("HTTPHandler(TrustClientScope) = %v; want nil", err)
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "note", Arguments: map[string]any{}}
	agentmcp.SetScope(params, agentmcp.Scope{Tenant: "acme", Session: "s", Turn: "1"})
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "Options.Identity") || runs.Load() != 0 {
		t.Errorf("call over HTTP without identity: IsError %v, text %q, runs %d; want a refusal naming Options.Identity and no run", res.IsError, text(res), runs.Load())
	}
}

// Each effect kind is advertised with the annotations it implies.
func TestAnnotations(t *testing.T) {
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	var tools []harness.Tool
	for _, e := range []journal.Effect{journal.Unkeyed, journal.ReadOnly, journal.Idempotent, journal.Keyed} {
		tools = append(tools, harness.Tool{Name: e.String(), Effect: e, Func: fn})
	}
	f := newFixture(t, tools...)
	cs := f.connect(t, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"unkeyed":    `{"destructiveHint":true,"idempotentHint":false,"readOnlyHint":false}`,
		"read-only":  `{"destructiveHint":false,"idempotentHint":true,"readOnlyHint":true}`,
		"idempotent": `{"idempotentHint":true,"readOnlyHint":false}`,
		"keyed":      `{"idempotentHint":true,"readOnlyHint":false}`,
	}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.Annotations)
		if w, ok := want[tool.Name]; !ok || string(b) != w {
			t.Errorf("annotations of %s = %s; want %s", tool.Name, b, w)
		}
		if tool.Meta[agentmcp.MetaDedupes] != true {
			t.Errorf("%s _meta = %v; want %s", tool.Name, tool.Meta, agentmcp.MetaDedupes)
		}
	}
	if len(res.Tools) != len(want) {
		t.Errorf("tools = %d; want %d", len(res.Tools), len(want))
	}
}

// Eight identical calls in parallel from a host that sends no scope, each
// on a session of its own: one charge, and every caller reads it.
func TestStandardHostParallelDuplicates(t *testing.T) {
	p := newPayments(t, true)
	f := newFixtureOpts(t, identified(), chargeTool(p))
	sessions := make([]*sdk.ClientSession, 8)
	for i := range sessions {
		sessions[i] = f.connectAs(t, "", "tok-bob")
	}
	results := make(chan *sdk.CallToolResult, len(sessions))
	for _, cs := range sessions {
		go func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": 10}})
			if err != nil {
				t.Errorf("CallTool: %v", err)
			}
			results <- res
		}()
	}
	wait(t, p.started, "the charge to start")
	close(p.gate)
	for range sessions {
		if res := <-results; res != nil && (res.IsError || !strings.Contains(text(res), `"ch_1"`)) {
			t.Errorf("IsError %v, text %q; want the one charge", res.IsError, text(res))
		}
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
}
