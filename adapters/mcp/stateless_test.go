package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
)

// MCP's stateless protocol (2026-07-28; the SDK's handler with
// StreamableHTTPOptions.Stateless): no transport session, each request its
// own POST. A standard host (no agentonce _meta) gives up on a slow charge,
// reconnects with a new client and sends the call again: one charge, and
// the model reads that the answer is the first call's, for a harness tool
// (AddTools) and a server's own tool (Wrap) alike.
func TestStatelessReconnect(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		t.Run(map[bool]string{false: "AddTools", true: "Wrap"}[wrap], func(t *testing.T) { statelessReconnect(t, wrap) })
	}
}

func statelessReconnect(t *testing.T, wrap bool) {
	p := newPayments(t, true)
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	charge := chargeTool(p)
	s := sdk.NewServer(&sdk.Implementation{Name: "payments", Version: "v1"}, nil)
	opts := identified()
	if wrap {
		s.AddTool(&sdk.Tool{Name: charge.Name, Description: charge.Description, InputSchema: json.RawMessage(charge.Schema)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				out, err := charge.Func(ctx, req.Params.Arguments)
				if err != nil {
					return nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}, nil
			})
		err = agentmcp.Wrap(s, h, opts)
	} else if err = h.Register(charge); err == nil {
		err = agentmcp.AddTools(s, h, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	handler, err := agentmcp.HTTPHandler(s, opts, &sdk.StreamableHTTPOptions{Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	var withSession atomic.Int64
	handler = auth.RequireBearerToken(verify, nil)(handler)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			withSession.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f := &fixture{h: h, url: srv.URL}
	bare := &sdk.CallToolParams{Name: charge.Name, Arguments: map[string]any{"amount": 4900}}

	cs1 := f.connectAs(t, "2026-07-28", "tok-alice")
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := cs1.CallTool(ctx, bare)
		first <- err
	}()
	wait(t, p.started, "the charge to start downstream")
	cancel()
	<-first
	cs1.Close()

	cs2 := f.connectAs(t, "2026-07-28", "tok-alice")
	retry := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs2.CallTool(context.Background(), bare)
		if err != nil {
			t.Errorf("retry after reconnect: %v", err)
		}
		retry <- res
	}()
	close(p.gate)
	if res := <-retry; res != nil && (res.IsError || !strings.Contains(text(res), `"charge_id":"ch_1"`) || !strings.Contains(text(res), "was not done again")) {
		t.Errorf("retry: IsError %v, text %q; want the first charge and a note saying so", res.IsError, text(res))
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if n := withSession.Load(); n != 0 {
		t.Errorf("%d requests carried a transport session id; want none (stateless)", n)
	}
}
