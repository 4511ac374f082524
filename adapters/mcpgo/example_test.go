package mcpgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// An mcp-go server offers a harness's tools over streamable HTTP behind
// bearer tokens. A host that sends no agentonce _meta sends the same call
// twice and the email goes out once.
func ExampleAddTools() {
	dir, _ := os.MkdirTemp("", "mcpgo")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := agentonce.Open(ctx, filepath.Join(dir, "journal.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	emails := 0
	h.Register(harness.Tool{Name: "send_email", Effect: journal.Keyed,
		Schema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			emails++
			return json.RawMessage(`{"sent":true}`), nil
		}})

	s := server.NewMCPServer("mail", "v1")
	opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(func(_ context.Context, token string) (mcpgo.Identity, error) {
		if token != "token-of-ada" { // a real verifier checks a signature or asks the issuer
			return mcpgo.Identity{}, errors.New("unknown token")
		}
		return mcpgo.Identity{Tenant: "acme", Principal: "ada"}, nil
	})}
	if err := mcpgo.AddTools(s, h, opts); err != nil {
		log.Fatal(err)
	}
	hs, err := mcpgo.HTTPServer(s, opts)
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(hs)
	defer srv.Close()

	c, _ := client.NewStreamableHttpClient(srv.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer token-of-ada"}))
	defer c.Close()
	c.Start(ctx)
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "host", Version: "v1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		var req mcp.CallToolRequest
		req.Params.Name = "send_email"
		req.Params.Arguments = map[string]any{"to": "ada@example.com"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Meta.AdditionalFields["io.github.agentonce/source"], res.IsError)
	}
	fmt.Println("emails sent:", emails)
	// Output:
	// executed false
	// replayed false
	// emails sent: 1
}

// Wrap protects the tools a server already has, as mcp-go registered
// them: a host sends the same refund twice (no agentonce _meta, so the
// de-duplication window places both) and the handler runs once.
func ExampleWrap() {
	s := server.NewMCPServer("shop", "v1")
	refunds := 0
	s.AddTool(mcp.NewTool("refund", mcp.WithDescription("Refund an order."), mcp.WithString("order", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			refunds++
			return mcp.NewToolResultText("refunded " + req.GetString("order", "")), nil
		})

	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	if err := mcpgo.Wrap(s, h, &mcpgo.Options{Effects: map[string]journal.Effect{"refund": journal.Unkeyed}}); err != nil {
		log.Fatal(err)
	}

	c, err := client.NewInProcessClient(s)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "host", Version: "v1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	var r mcp.CallToolRequest
	r.Params.Name, r.Params.Arguments = "refund", map[string]any{"order": "A-17"}
	for range 2 {
		res, err := c.CallTool(ctx, r)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(mcp.TextContent).Text, res.Meta.AdditionalFields["io.github.agentonce/source"])
	}
	fmt.Println("refunds:", refunds)
	// Output:
	// refunded A-17 executed
	// refunded A-17 replayed
	// refunds: 1
}
