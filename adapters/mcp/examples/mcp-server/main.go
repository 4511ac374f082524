// Command mcp-server serves a payment tool over MCP through agentonce and
// drives it with real MCP clients that do what clients do: an agent that
// sends its scope gives up on a slow call and retries it, reconnects and
// re-sends; a standard host that sends no scope (as Claude Desktop or an
// IDE) sends a call, reconnects and sends it again. Both authenticate with
// a bearer token, from which the server takes tenant and principal.
// Everything runs in this process on loopback: the payment API, the MCP
// server (streamable HTTP) and the client. It ends by printing the charges
// the payment API really made.
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
	if err := h.Register(chargeTool(apiSrv)); err != nil {
		return err
	}
	mcpSrv, err := serveMCP(h)
	if err != nil {
		return err
	}
	defer mcpSrv.Close()

	c := &client{ctx: ctx, out: out, url: mcpSrv.URL,
		scope: agentmcp.Scope{Tenant: "acme", Session: "conversation-42", Turn: "1"}}
	defer c.close()
	for _, step := range []func() error{
		func() error { return c.giveUpAndRetry(api) },
		c.resendAfterReconnect,
		c.hostWithoutScope,
		c.nextTurn,
	} {
		if err := step(); err != nil {
			return err
		}
	}

	charges, dups := api.counts()
	fmt.Fprintf(out, "charges made by the payment API: %d (intents: 3)\n", charges)
	fmt.Fprintf(out, "duplicate side effects: %d\n", dups)
	if dups != 0 || charges != 3 {
		return fmt.Errorf("%d charges, %d duplicates; want 3 and 0", charges, dups)
	}
	return nil
}

// chargeTool is charge_card, which charges through the payment API.
func chargeTool(api *httptest.Server) harness.Tool {
	return harness.Tool{
		Name:        "charge_card",
		Description: "Charge the customer's card; amount in cents.",
		Effect:      journal.Unkeyed,
		Schema:      json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.URL+"/charges", strings.NewReader(string(in)))
			if err != nil {
				return nil, err
			}
			return downstream.ReadJSON(api.Client().Do(req))
		},
	}
}

// serveMCP serves h's tools over MCP (streamable HTTP) on loopback, behind
// the bearer token check.
func serveMCP(h *harness.Harness) (*httptest.Server, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	// The tenant and principal come from the bearer token ("org" claim and
	// subject); a client's session and turn are scoped under them.
	opts := &agentmcp.Options{Identity: agentmcp.TokenIdentity("org")}
	if err := agentmcp.AddTools(server, h, opts); err != nil {
		return nil, err
	}
	handler, err := agentmcp.HTTPHandler(server, opts, &mcp.StreamableHTTPOptions{PropagateRequestCancellation: true})
	if err != nil {
		return nil, err
	}
	return httptest.NewServer(auth.RequireBearerToken(verifyToken, nil)(handler)), nil
}

// client is the MCP client of the demonstration, Ada's, connected to the
// server at url; each of its steps prints the answers it got.
type client struct {
	ctx   context.Context
	out   io.Writer
	url   string
	scope agentmcp.Scope
	cs    *mcp.ClientSession // the current connection
}

// reconnect closes the current connection, if any, and opens a new one (a
// new transport session).
func (c *client) reconnect() error {
	c.close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := cl.Connect(c.ctx, &mcp.StreamableClientTransport{Endpoint: c.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: withToken{"token-of-ada"}}}, nil)
	c.cs = cs
	return err
}

func (c *client) close() {
	if c.cs != nil {
		c.cs.Close()
		c.cs = nil
	}
}

// charge is a charge_card call of amount in scope s.
func charge(s agentmcp.Scope, amount int) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": amount}}
	agentmcp.SetScope(p, s)
	return p
}

// call sends p and prints the answer after what.
func (c *client) call(what string, p *mcp.CallToolParams) error {
	res, err := c.cs.CallTool(c.ctx, p)
	if err != nil {
		return err
	}
	c.show(what, res)
	return nil
}

func (c *client) show(what string, res *mcp.CallToolResult) {
	text, note, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, "\n\n")
	if note != "" {
		text += " [+ a note: " + note[:strings.Index(note, ",")] + "…]"
	}
	fmt.Fprintf(c.out, "%-34s %-10s %-9s error=%-5v %s\n", what, res.Meta[agentmcp.MetaStatus], res.Meta[agentmcp.MetaSource], res.IsError, text)
}

// giveUpAndRetry: the client gives up on a slow charge, and the charge
// goes on; it retries at once, while the first charge is still running.
func (c *client) giveUpAndRetry(api *paymentAPI) error {
	if err := c.reconnect(); err != nil {
		return err
	}
	callCtx, giveUp := context.WithCancel(c.ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(callCtx, charge(c.scope, 4900))
		gaveUp <- err
	}()
	<-api.held
	giveUp()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the first call ended with %v; want the client's cancellation", err)
	}
	fmt.Fprintln(c.out, "client gave up on charge_card(4900) while the payment API was still charging")

	retried := make(chan *mcp.CallToolResult, 1)
	retryErr := make(chan error, 1)
	go func() {
		res, err := c.cs.CallTool(c.ctx, charge(c.scope, 4900))
		retried <- res
		retryErr <- err
	}()
	close(api.release)
	res := <-retried
	if err := <-retryErr; err != nil {
		return err
	}
	c.show("retry after giving up:", res)
	return nil
}

// resendAfterReconnect: the client reconnects and re-sends the call.
func (c *client) resendAfterReconnect() error {
	if err := c.reconnect(); err != nil {
		return err
	}
	return c.call("re-sent after reconnecting:", charge(c.scope, 4900))
}

// hostWithoutScope: a standard host sends no scope; the window places the
// call, and the same call again after a reconnect is the same intent. The
// model reads that it was not done again and how to repeat on purpose.
func (c *client) hostWithoutScope() error {
	host := &mcp.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": 100}}
	if err := c.call("host call without _meta scope:", host); err != nil {
		return err
	}
	if err := c.reconnect(); err != nil {
		return err
	}
	return c.call("host re-sends after reconnecting:", host)
}

// nextTurn: the next user turn charges again, a new intent.
func (c *client) nextTurn() error {
	next := c.scope
	next.Turn = "2"
	return c.call("next turn, new charge:", charge(next, 2500))
}
