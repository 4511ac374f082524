package mcpgo_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/harness"
)

// MCP's stateless protocol (2026-07-28): no initialize handshake, no
// transport session, each request its own POST. A standard host (no
// agentonce _meta) gives up on a slow charge, reconnects with a new client
// and sends the call again: one charge, for a harness tool (AddTools) and
// for a server's own tool (Wrap) alike.
func TestStatelessReconnect(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		name := map[bool]string{false: "AddTools", true: "Wrap"}[wrap]
		t.Run(name, func(t *testing.T) {
			p := newPayments(t, true)
			h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			s := server.NewMCPServer("payments", "v1")
			var calls, legacy atomic.Int64
			s.Use(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
				return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					calls.Add(1)
					if !server.IsModernRequest(ctx) {
						legacy.Add(1)
					}
					return next(ctx, req)
				}
			})
			opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(verify)}
			if wrap {
				addOwnCharge(s, chargeTool(p))
				err = mcpgo.Wrap(s, h, opts)
			} else if err = h.Register(chargeTool(p)); err == nil {
				err = mcpgo.AddTools(s, h, opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			hs, err := mcpgo.HTTPServer(s, opts)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptestServer(t, hs)

			c1 := connectAt(t, srv, "tok-alice", mcp.ProtocolVersion20260728)
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := c1.CallTool(ctx, charge(2500))
				first <- err
			}()
			wait(t, p.started, "the charge to start")
			cancel()
			if err := <-first; err == nil {
				t.Fatalf("CallTool after cancel = nil error; want the cancellation")
			}
			c1.Close()

			c2 := connectAt(t, srv, "tok-alice", mcp.ProtocolVersion20260728)
			retry := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := c2.CallTool(context.Background(), charge(2500))
				if err != nil {
					t.Errorf("retry: %v", err)
				}
				retry <- res
			}()
			p.release()
			if res := <-retry; res != nil && (res.IsError || !strings.Contains(text(res), `"ch_1"`) || !strings.Contains(text(res), "was not done again")) {
				t.Errorf("retry: IsError %v, text %q; want the first charge and a note saying so", res.IsError, text(res))
			}
			if n := p.charges.Load(); n != 1 {
				t.Errorf("charges = %d; want 1", n)
			}
			if calls.Load() != 2 || legacy.Load() != 0 {
				t.Errorf("tools/call requests %d, of them not stateless %d; want 2 and 0", calls.Load(), legacy.Load())
			}
		})
	}
}

// addOwnCharge adds t to s as a server's own tool: mcp-go's definition and
// a handler that runs t's Func on the request's arguments.
func addOwnCharge(s *server.MCPServer, t harness.Tool) {
	s.AddTool(mcp.NewTool(t.Name, mcp.WithDescription(t.Description), mcp.WithNumber("amount", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := t.Func(ctx, req.Params.RawArguments)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(string(out)), nil
		})
}
