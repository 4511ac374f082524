package mcpgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// payments is the downstream: a real HTTP server on loopback that counts
// the charges it made and, when held, keeps each request until released,
// finishing it whether or not its client still waits.
type payments struct {
	srv     *httptest.Server
	charges atomic.Int64
	started chan struct{}
	gate    chan struct{}
	once    sync.Once
}

// release lets every held request finish; a test that fails early has its
// cleanup release them, so the server can close.
func (p *payments) release() { p.once.Do(func() { close(p.gate) }) }

func newPayments(t *testing.T, hold bool) *payments {
	p := &payments{started: make(chan struct{}, 64)}
	if hold {
		p.gate = make(chan struct{})
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		p.started <- struct{}{}
		if p.gate != nil {
			<-p.gate
		}
		fmt.Fprintf(w, `{"charge_id":"ch_%d"}`, p.charges.Add(1))
	}))
	t.Cleanup(p.srv.Close)
	if hold {
		t.Cleanup(p.release)
	}
	return p
}

func chargeTool(p *payments) harness.Tool {
	return harness.Tool{
		Name: "charge_card", Description: "Charge the customer's card.", Effect: journal.Unkeyed,
		Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL, strings.NewReader(string(in)))
			if err != nil {
				return nil, err
			}
			return downstream.ReadJSON(p.srv.Client().Do(req))
		},
	}
}

func verify(_ context.Context, token string) (mcpgo.Identity, error) {
	switch token {
	case "tok-alice":
		return mcpgo.Identity{Tenant: "acme", Principal: "alice"}, nil
	case "tok-bob":
		return mcpgo.Identity{Tenant: "acme", Principal: "bob"}, nil
	}
	return mcpgo.Identity{}, errors.New("invalid token")
}

// serve serves the tools of a harness on path over mcp-go's streamable
// HTTP, behind bearer tokens; stop closes the listener and the harness.
func serve(t *testing.T, path string, tools ...harness.Tool) (url string, stop func()) {
	t.Helper()
	h, err := agentonce.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Register(tools...); err != nil {
		t.Fatal(err)
	}
	s := server.NewMCPServer("payments", "v1")
	opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(verify)}
	if err := mcpgo.AddTools(s, h, opts); err != nil {
		t.Fatal(err)
	}
	hs, err := mcpgo.HTTPServer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hs)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Close()
			h.Close()
		})
	}
	t.Cleanup(stop)
	return srv.URL, stop
}

// connect starts an mcp-go client session sending token, at the client's
// latest protocol version.
func connect(t *testing.T, url, token string) *client.Client {
	t.Helper()
	return connectAt(t, url, token, "")
}

// connectAt starts a client session at the given protocol version.
func connectAt(t *testing.T, url, token, version string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "host", Version: "v0"}
	init.Params.ProtocolVersion = version
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// charge is a tools/call as a standard host sends it: no agentonce _meta.
func charge(amount int) mcp.CallToolRequest {
	var r mcp.CallToolRequest
	r.Params.Name = "charge_card"
	r.Params.Arguments = map[string]any{"amount": amount}
	return r
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func source(r *mcp.CallToolResult) string {
	if r.Meta == nil {
		return ""
	}
	s, _ := r.Meta.AdditionalFields["io.github.agentonce/source"].(string)
	return s
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}

// Eight identical calls in parallel from one user: one charge, and every
// caller reads it.
func TestParallelDuplicate(t *testing.T) {
	p := newPayments(t, true)
	url, _ := serve(t, filepath.Join(t.TempDir(), "journal.db"), chargeTool(p))
	c := connect(t, url, "tok-alice")
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 8)
	for i := range results {
		wg.Go(func() {
			res, err := c.CallTool(context.Background(), charge(4900))
			if err != nil {
				t.Errorf("CallTool: %v", err)
			}
			results[i] = res
		})
	}
	wait(t, p.started, "the charge to start")
	p.release()
	wg.Wait()
	for i, res := range results {
		if res != nil && (res.IsError || !strings.Contains(text(res), `"ch_1"`)) {
			t.Errorf("call %d: IsError %v, text %q; want the one charge", i, res.IsError, text(res))
		}
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
}

// A host gives up on a slow charge, reconnects and retries: one charge, and
// the model reads that the answer is the first call's. Another user's
// identical call is a charge of its own.
func TestRetryAfterLostAnswer(t *testing.T) {
	p := newPayments(t, true)
	url, _ := serve(t, filepath.Join(t.TempDir(), "journal.db"), chargeTool(p))
	c1 := connect(t, url, "tok-alice")
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c1.CallTool(ctx, charge(1200))
		first <- err
	}()
	wait(t, p.started, "the charge to start")
	cancel()
	if err := <-first; err == nil {
		t.Fatalf("CallTool after cancel = nil error; want the cancellation")
	}
	c1.Close()
	c2 := connect(t, url, "tok-alice")
	retry := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c2.CallTool(context.Background(), charge(1200))
		if err != nil {
			t.Errorf("retry: %v", err)
		}
		retry <- res
	}()
	p.release()
	if res := <-retry; res != nil {
		if res.IsError || !strings.Contains(text(res), `"ch_1"`) || !strings.Contains(text(res), "was not done again") {
			t.Errorf("retry: IsError %v, text %q; want the first charge and a note saying so", res.IsError, text(res))
		}
		if s := source(res); s != "collapsed" && s != "replayed" {
			t.Errorf("retry source = %q; want collapsed or replayed", s)
		}
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	res, err := connect(t, url, "tok-bob").CallTool(context.Background(), charge(1200))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || source(res) != "executed" || p.charges.Load() != 2 {
		t.Errorf("bob: IsError %v, source %q, charges %d; want his own charge", res.IsError, source(res), p.charges.Load())
	}
}

// The server restarts on the same bbolt journal between a call and its
// retry: one charge, answered from the journal.
func TestRestartSameJournal(t *testing.T) {
	p := newPayments(t, false)
	path := filepath.Join(t.TempDir(), "journal.db")
	url, stop := serve(t, path, chargeTool(p))
	res, err := connect(t, url, "tok-alice").CallTool(context.Background(), charge(300))
	if err != nil || res.IsError {
		t.Fatalf("first call: %v, %v", err, res)
	}
	stop()
	url, _ = serve(t, path, chargeTool(p))
	res, err = connect(t, url, "tok-alice").CallTool(context.Background(), charge(300))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || source(res) != "replayed" || !strings.Contains(text(res), `"ch_1"`) {
		t.Errorf("after restart: IsError %v, source %q, text %q; want the first charge replayed", res.IsError, source(res), text(res))
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
}

// Without an identity the HTTP server does not start, and a handler served
// over HTTP anyway refuses; annotations follow the effect kind.
func TestNoIdentityAndAnnotations(t *testing.T) {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	var runs atomic.Int64
	h.Register(harness.Tool{Name: "lookup", Effect: journal.ReadOnly, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{}`), nil
	}})
	s := server.NewMCPServer("t", "v0")
	if err := mcpgo.AddTools(s, h, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpgo.HTTPServer(s, nil); !errors.Is(err, mcpgo.ErrNoIdentity) {
		t.Errorf("HTTPServer(no identity) = %v; want ErrNoIdentity", err)
	}
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer srv.Close()
	c := connect(t, srv.URL, "anything")
	var r mcp.CallToolRequest
	r.Params.Name = "lookup"
	res, err := c.CallTool(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "Options.Identity") || runs.Load() != 0 {
		t.Errorf("call without identity: IsError %v, text %q, runs %d; want a refusal", res.IsError, text(res), runs.Load())
	}
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	a := list.Tools[0].Annotations
	if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("lookup annotations = %+v; want read-only, not destructive", a)
	}
}
