// Command mcp-server serves a payment tool over MCP through agentonce and
// drives it with real MCP clients that do what clients do: an agent that
// sends its scope gives up on a slow call and retries it, reconnects and
// re-sends; a standard host that sends no scope (as Claude Desktop or an
// IDE) sends a call, reconnects and sends it again. Both authenticate with
// a bearer token, from which the server takes tenant and principal. Everything runs in this process on loopback: the payment API,
// the MCP server (streamable HTTP) and the client. It ends by printing the
// charges the payment API really made.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

func main() {
	journalPath := flag.String("journal", "", "journal `file` (bbolt); default: a new one in a temporary directory")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *journalPath); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-server:", err)
		os.Exit(1)
	}
}

// paymentAPI is the downstream: it charges once per request it receives,
// finishes a charge even when its caller has gone, and holds the first
// charge until released, as a slow provider would.
type paymentAPI struct {
	mu      sync.Mutex
	charges map[string]int // amount → charges made
	held    chan struct{}  // receives when the first charge arrived
	release chan struct{}  // closed to let the first charge finish
	first   sync.Once
}

func (p *paymentAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.first.Do(func() {
		p.held <- struct{}{}
		<-p.release
	})
	var in struct {
		Amount int `json:"amount"`
	}
	json.Unmarshal(body, &in)
	p.mu.Lock()
	p.charges[fmt.Sprint(in.Amount)]++
	n := 0
	for _, c := range p.charges {
		n += c
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"charge_id":"ch_%d","amount":%d}`, n, in.Amount)
}

func (p *paymentAPI) counts() (charges, duplicates int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.charges {
		charges += c
		duplicates += c - 1
	}
	return charges, duplicates
}

// verifyToken stands for the server's token verifier (a JWT check, an
// introspection call): the one token it knows is Ada's, of tenant acme.
func verifyToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if token != "token-of-ada" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: "ada", Extra: map[string]any{"org": "acme"}, Expiration: time.Now().Add(time.Hour)}, nil
}

// withToken sends a bearer token, as a configured client does.
type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
}

func run(ctx context.Context, out io.Writer, journalPath string) error {
	if journalPath == "" {
		dir, err := os.MkdirTemp("", "mcp-server")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		journalPath = filepath.Join(dir, "journal.db")
	}
	api := &paymentAPI{charges: map[string]int{}, held: make(chan struct{}, 1), release: make(chan struct{})}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()

	h, err := agentonce.Open(ctx, journalPath, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	err = h.Register(harness.Tool{
		Name:        "charge_card",
		Description: "Charge the customer's card; amount in cents.",
		Effect:      journal.Unkeyed,
		Schema:      json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, apiSrv.URL+"/charges", strings.NewReader(string(in)))
			if err != nil {
				return nil, err
			}
			return downstream.ReadJSON(apiSrv.Client().Do(req))
		},
	})
	if err != nil {
		return err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	// The tenant and principal come from the bearer token ("org" claim and
	// subject); a client's session and turn are scoped under them.
	opts := &agentmcp.Options{Identity: agentmcp.TokenIdentity("org")}
	if err := agentmcp.AddTools(server, h, opts); err != nil {
		return err
	}
	handler, err := agentmcp.HTTPHandler(server, opts, &mcp.StreamableHTTPOptions{PropagateRequestCancellation: true})
	if err != nil {
		return err
	}
	mcpSrv := httptest.NewServer(auth.RequireBearerToken(verifyToken, nil)(handler))
	defer mcpSrv.Close()

	connect := func() (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpSrv.URL, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: withToken{"token-of-ada"}}}, nil)
	}
	scope := agentmcp.Scope{Tenant: "acme", Session: "conversation-42", Turn: "1"}
	charge := func(s agentmcp.Scope, amount int) *mcp.CallToolParams {
		p := &mcp.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": amount}}
		agentmcp.SetScope(p, s)
		return p
	}
	show := func(what string, res *mcp.CallToolResult) {
		text, note, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, "\n\n")
		if note != "" {
			text += " [+ a note: " + note[:strings.Index(note, ",")] + "…]"
		}
		fmt.Fprintf(out, "%-34s %-10s %-9s error=%-5v %s\n", what, res.Meta[agentmcp.MetaStatus], res.Meta[agentmcp.MetaSource], res.IsError, text)
	}

	cs, err := connect()
	if err != nil {
		return err
	}
	// 1. The client gives up on a slow charge; the charge goes on.
	callCtx, giveUp := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, charge(scope, 4900))
		gaveUp <- err
	}()
	<-api.held
	giveUp()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the first call ended with %v; want the client's cancellation", err)
	}
	fmt.Fprintln(out, "client gave up on charge_card(4900) while the payment API was still charging")

	// 2. It retries at once, while the first charge is still running.
	retried := make(chan *mcp.CallToolResult, 1)
	retryErr := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, charge(scope, 4900))
		retried <- res
		retryErr <- err
	}()
	close(api.release)
	res := <-retried
	if err := <-retryErr; err != nil {
		return err
	}
	show("retry after giving up:", res)
	cs.Close()

	// 3. It reconnects (a new transport session) and re-sends the call.
	if cs, err = connect(); err != nil {
		return err
	}
	defer cs.Close()
	if res, err = cs.CallTool(ctx, charge(scope, 4900)); err != nil {
		return err
	}
	show("re-sent after reconnecting:", res)

	// 4. A standard host sends no scope: the window places the call, and
	// the same call again after a reconnect is the same intent. The model
	// reads that it was not done again and how to repeat on purpose.
	host := &mcp.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": 100}}
	if res, err = cs.CallTool(ctx, host); err != nil {
		return err
	}
	show("host call without _meta scope:", res)
	cs.Close()
	if cs, err = connect(); err != nil {
		return err
	}
	defer cs.Close()
	if res, err = cs.CallTool(ctx, host); err != nil {
		return err
	}
	show("host re-sends after reconnecting:", res)

	// 5. The next user turn charges again: a new intent.
	next := scope
	next.Turn = "2"
	if res, err = cs.CallTool(ctx, charge(next, 2500)); err != nil {
		return err
	}
	show("next turn, new charge:", res)

	charges, dups := api.counts()
	fmt.Fprintf(out, "charges made by the payment API: %d (intents: 3)\n", charges)
	fmt.Fprintf(out, "duplicate side effects: %d\n", dups)
	if dups != 0 || charges != 3 {
		return fmt.Errorf("%d charges, %d duplicates; want 3 and 0", charges, dups)
	}
	return nil
}
