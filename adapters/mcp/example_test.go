package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// A server offers a harness's tools over streamable HTTP; a client sends
// the same call twice with the same scope, and the tool runs once.
func ExampleAddTools() {
	dir, _ := os.MkdirTemp("", "agentmcp")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := harness.Open(ctx, filepath.Join(dir, "journal.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	emails := 0
	h.Register(harness.Tool{
		Name:        "send_email",
		Description: "Send an email to the customer.",
		Effect:      journal.Keyed,
		Schema:      json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			emails++
			return json.RawMessage(`{"sent":true}`), nil
		},
	})

	server := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "v1"}, nil)
	if err := agentmcp.AddTools(server, h, nil); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		params := &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ada@example.com"}}
		agentmcp.SetScope(params, agentmcp.Scope{Tenant: "acme", Session: "conversation-42", Turn: "1"})
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Meta[agentmcp.MetaSource], res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	fmt.Println("emails sent:", emails)
	// Output:
	// executed false {"sent":true}
	// replayed false {"sent":true}
	// emails sent: 1
}

// SetScope puts the call's scope into the request's _meta, where the
// server's handler reads it.
func ExampleSetScope() {
	params := &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ada@example.com"}}
	agentmcp.SetScope(params, agentmcp.Scope{Tenant: "acme", Session: "conversation-42", Turn: "1"})
	b, _ := json.Marshal(params.Meta)
	fmt.Println(string(b))
	// Output:
	// {"io.github.agentonce/session":"conversation-42","io.github.agentonce/tenant":"acme","io.github.agentonce/turn":"1"}
}

// A Result the harness answered becomes the CallToolResult the client
// gets: an unknown outcome is an error whose text tells the model not to
// retry.
func ExampleCallToolResult() {
	res := agentmcp.CallToolResult(harness.Result{Tool: "charge_card", Status: harness.Unknown, Source: harness.Executed,
		Err: &harness.OutcomeError{Tool: "charge_card", Status: harness.Unknown, Message: "timeout"}})
	fmt.Println(res.IsError, res.Meta[agentmcp.MetaStatus], res.Meta[agentmcp.MetaSource])
	fmt.Println(res.Content[0].(*mcp.TextContent).Text[:57])
	// Output:
	// true unknown executed
	// The outcome of this action is unknown: it may or may not
}

// Handler serves one harness tool under a definition of your own, here
// with a title for the host's user interface.
func ExampleHandler() {
	dir, _ := os.MkdirTemp("", "agentmcp")
	defer os.RemoveAll(dir)
	h, err := harness.Open(context.Background(), filepath.Join(dir, "journal.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	h.Register(harness.Tool{Name: "lookup_order", Effect: journal.ReadOnly, NoTurn: true,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"status":"shipped"}`), nil
		}})
	server := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{
		Name:        "lookup_order",
		Title:       "Look up an order",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, agentmcp.Handler(h, "lookup_order", &agentmcp.Options{MaxCall: time.Minute}))

	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	// A NoTurn tool needs only the tenant.
	params := &mcp.CallToolParams{Name: "lookup_order", Arguments: map[string]any{"order": "A-17"}}
	agentmcp.SetScope(params, agentmcp.Scope{Tenant: "acme"})
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// false {"status":"shipped"}
}
