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
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// A server offers a harness's tools over streamable HTTP behind bearer
// tokens, the caller's identity taken from the token. A host that sends no
// agentonce _meta (as Claude Desktop or an IDE) sends the same call twice,
// reconnecting in between, and the email goes out once: identical calls of
// one user inside the window are one intent.
func ExampleAddTools() {
	dir, _ := os.MkdirTemp("", "agentmcp")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := agentonce.Open(ctx, filepath.Join(dir, "journal.db"), nil)
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
	opts := &agentmcp.Options{Identity: agentmcp.TokenIdentity("org")}
	if err := agentmcp.AddTools(server, h, opts); err != nil {
		log.Fatal(err)
	}
	handler, err := agentmcp.HTTPHandler(server, opts, nil)
	if err != nil {
		log.Fatal(err)
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "token-of-ada" { // a real verifier checks a signature or asks the issuer
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "ada", Extra: map[string]any{"org": "acme"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	defer srv.Close()

	for range 2 {
		client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil)
		transport := &mcp.StreamableClientTransport{Endpoint: srv.URL,
			HTTPClient: &http.Client{Transport: withToken{"token-of-ada"}}}
		cs, err := client.Connect(ctx, transport, nil)
		if err != nil {
			log.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ada@example.com"}})
		if err != nil {
			log.Fatal(err)
		}
		text, note, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, "\n\n")
		fmt.Println(res.Meta[agentmcp.MetaSource], res.IsError, text, strings.Contains(note, agentmcp.RepeatArgument))
		cs.Close()
	}
	fmt.Println("emails sent:", emails)
	// Output:
	// executed false {"sent":true} false
	// replayed false {"sent":true} true
	// emails sent: 1
}

// withToken sends a bearer token, as a host configured with one does.
type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
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
	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "journal.db"), nil)
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

// ClientTools wraps the tools of a remote MCP server as harness tools: an
// agent's retry of a call is sent with the same key, and a server on
// agentonce (trusted here, so its annotations are believed) answers it
// from its journal.
func ExampleClientTools() {
	ctx := context.Background()
	// The server: one Keyed tool, on an in-memory transport (trusted, as
	// stdio is).
	remote := harness.New(memory.New(nil), nil)
	defer remote.Close()
	sent := 0
	remote.Register(harness.Tool{Name: "send_invoice", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			sent++
			return json.RawMessage(`{"invoice":"in_1"}`), nil
		}})
	server := mcp.NewServer(&mcp.Implementation{Name: "billing", Version: "v1"}, nil)
	agentmcp.AddTools(server, remote, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()

	// The agent: its own harness, with the remote tools registered.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	tools, err := agentmcp.ClientTools(ctx, cs, &agentmcp.ClientOptions{TrustAnnotations: true, Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	agent := harness.New(memory.New(nil), nil)
	defer agent.Close()
	agent.Register(tools...)
	fmt.Println(tools[0].Name, tools[0].Effect)
	res := agent.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "conv-1", Turn: "1",
		Tool: "send_invoice", Input: json.RawMessage(`{"to":"ada"}`)})
	fmt.Println(res.Status, res.ForModel(), "invoices sent:", sent)
	// Output:
	// send_invoice keyed
	// succeeded {"invoice":"in_1"} invoices sent: 1
}

// Wrap protects the tools a server already has, as the SDK registered
// them: a host sends the same refund twice (no agentonce _meta, so the
// de-duplication window places both) and the handler runs once.
func ExampleWrap() {
	type refundIn struct {
		Order string `json:"order"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
	refunds := 0
	mcp.AddTool(server, &mcp.Tool{Name: "refund", Description: "Refund an order."},
		func(_ context.Context, _ *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, any, error) {
			refunds++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded " + in.Order}}}, nil, nil
		})

	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	if err := agentmcp.Wrap(server, h, &agentmcp.Options{Effects: map[string]journal.Effect{"refund": journal.Unkeyed}}); err != nil {
		log.Fatal(err)
	}

	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"order": "A-17"}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text, res.Meta[agentmcp.MetaSource])
	}
	fmt.Println("refunds:", refunds)
	// Output:
	// refunded A-17 executed
	// refunded A-17 replayed
	// refunds: 1
}
