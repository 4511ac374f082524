package mcp_test

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
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/retryclass"
)

// payments is the downstream API the charge tool calls: a real HTTP server
// on loopback that counts the charges it made. Like a real provider it
// finishes a charge whether or not its client is still waiting.
type payments struct {
	srv     *httptest.Server
	charges atomic.Int64
	// started receives once per request that arrived.
	started chan struct{}
	// gate, when not nil, holds every request until it is closed.
	gate chan struct{}
	// abandoned receives when a held request's client went away.
	abandoned chan struct{}
}

func newPayments(t *testing.T, hold bool) *payments {
	p := &payments{started: make(chan struct{}, 64), abandoned: make(chan struct{}, 64)}
	if hold {
		p.gate = make(chan struct{})
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets net/http notice a client that
		// goes away (r.Context ends).
		io.Copy(io.Discard, r.Body)
		p.started <- struct{}{}
		if p.gate != nil {
			select {
			case <-p.gate:
			case <-r.Context().Done():
				p.abandoned <- struct{}{}
				<-p.gate
			}
		}
		n := p.charges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"charge_id":"ch_%d"}`, n)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// chargeTool is an Unkeyed tool, the strictest kind: after an attempt that
// may have taken effect it is never run again.
func chargeTool(p *payments) harness.Tool {
	return harness.Tool{
		Name:        "charge_card",
		Description: "Charge the customer's card.",
		Effect:      journal.Unkeyed,
		Schema:      json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL+"/charge", strings.NewReader(string(in)))
			if err != nil {
				return nil, err
			}
			return downstream.ReadJSON(p.srv.Client().Do(req))
		},
	}
}

// fixture is a Harness on a bbolt journal served over streamable HTTP.
type fixture struct {
	h   *harness.Harness
	url string
	// runs counts the harness events that start a flight: any call that
	// got as far as the journal.
	runs atomic.Int64
	// leftEarly receives when a tools/call handler returned an error (the
	// adapter's answer to a request that ended) or with its request's
	// context ended: the server saw the client give up.
	leftEarly chan struct{}
}

func newFixture(t *testing.T, tools ...harness.Tool) *fixture {
	t.Helper()
	return newFixtureOpts(t, &agentmcp.Options{TrustClientScope: true}, tools...)
}

// tokens are the bearer tokens the fixture's verifier accepts: the user
// and the tenant each names.
var tokens = map[string][2]string{
	"tok-alice": {"alice", "acme"},
	"tok-bob":   {"bob", "acme"},
	"tok-carol": {"carol", "beta"},
}

func verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	u, ok := tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: u[0], Extra: map[string]any{"org": u[1]}, Expiration: time.Now().Add(time.Hour)}, nil
}

// newFixtureOpts serves tools with opts; with an Identity, behind the SDK's
// bearer-token middleware.
func newFixtureOpts(t *testing.T, opts *agentmcp.Options, tools ...harness.Tool) *fixture {
	t.Helper()
	f := &fixture{leftEarly: make(chan struct{}, 64)}
	obs := harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		if e.Kind == harness.EventBeforeWriteAhead {
			f.runs.Add(1)
		}
	})
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), &agentonce.OpenOptions{Options: harness.Options{Observer: obs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.Register(tools...); err != nil {
		t.Fatal(err)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "agentonce-test", Version: "v0.0.1"}, nil)
	if err := agentmcp.AddTools(s, h, opts); err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			res, err := next(ctx, method, req)
			if err != nil || ctx.Err() != nil {
				f.leftEarly <- struct{}{}
			}
			return res, err
		}
	})
	// PropagateRequestCancellation makes a client that gives up cancel the
	// handler's context under every protocol: the worst case for an effect
	// in flight.
	handler, err := agentmcp.HTTPHandler(s, opts, &sdk.StreamableHTTPOptions{PropagateRequestCancellation: true})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Identity != nil {
		handler = auth.RequireBearerToken(verify, nil)(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	f.h, f.url = h, srv.URL
	return f
}

// connect opens a client session with the real SDK client at the given
// protocol version ("" is the SDK's latest).
func (f *fixture) connect(t *testing.T, version string) *sdk.ClientSession {
	t.Helper()
	return f.connectAs(t, version, "")
}

// bearer adds a bearer token to every request, as a host configured with
// one does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connectAs opens a client session sending token ("" for none).
func (f *fixture) connectAs(t *testing.T, version, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "agentonce-test-client", Version: "v0.0.1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: f.url, DisableStandaloneSSE: true}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearer{token, http.DefaultTransport}}
	}
	cs, err := c.Connect(context.Background(), tr,
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// awaitGiveUp waits until the server has seen a client give up on a call,
// then gives a handler that passed the cancellation on the time to kill the
// charge's downstream request (a correct one never does), so that the
// retry that follows cannot join the first call before it was killed.
func (f *fixture) awaitGiveUp(t *testing.T, p *payments) {
	t.Helper()
	wait(t, f.leftEarly, "the server to see the client give up")
	select {
	case <-p.abandoned:
		t.Errorf("the charge's downstream request was abandoned when the MCP client gave up")
	case <-time.After(200 * time.Millisecond):
	}
}

// wait receives from ch, failing the test if nothing comes within a
// minute: a bound on a hang, not a timing assertion.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}

func chargeParams(scope agentmcp.Scope, amount int) *sdk.CallToolParams {
	p := &sdk.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": amount}}
	agentmcp.SetScope(p, scope)
	return p
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func metaOf(r *sdk.CallToolResult, key string) string {
	s, _ := r.Meta[key].(string)
	return s
}

// protocols are the versions every scenario runs at: the client's choice
// ("") and 2025-11-25, the last one with a transport session id. Against
// the fixture's handler, which is not Stateless, the client's choice is
// 2025-11-25 too; the stateless protocol (2026-07-28) is
// TestStatelessReconnect's.
var protocols = []string{"", "2025-11-25"}

// A client that gives up on a call while the charge is running, then sends
// the same call again, gets the one charge's answer: the first call was
// not killed by the client's cancellation, and the retry joined it or read
// its outcome from the journal.
func TestClientGivesUpAndRetries(t *testing.T) {
	for _, version := range protocols {
		t.Run("protocol="+version, func(t *testing.T) {
			p := newPayments(t, true)
			f := newFixture(t, chargeTool(p))
			cs := f.connect(t, version)
			scope := agentmcp.Scope{Tenant: "acme", Session: "conv-1", Turn: "1"}

			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, chargeParams(scope, 4900))
				first <- err
			}()
			wait(t, p.started, "the charge to start downstream")
			cancel()
			if err := <-first; err == nil {
				t.Fatalf("CallTool after cancel = nil error; want the client's cancellation")
			}
			f.awaitGiveUp(t, p)

			retry := make(chan *sdk.CallToolResult, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), chargeParams(scope, 4900))
				if err != nil {
					t.Errorf("retry CallTool: %v", err)
				}
				retry <- res
			}()
			close(p.gate)
			res := <-retry
			if res == nil {
				return
			}
			if res.IsError {
				t.Errorf("retry IsError = true (%s); want the charge's success", text(res))
			}
			if src := metaOf(res, agentmcp.MetaSource); src != "collapsed" && src != "replayed" {
				t.Errorf("retry source = %q; want collapsed or replayed", src)
			}
			if !strings.Contains(text(res), `"charge_id":"ch_1"`) {
				t.Errorf("retry text = %s; want the first charge's id", text(res))
			}
			again, err := cs.CallTool(context.Background(), chargeParams(scope, 4900))
			if err != nil {
				t.Fatal(err)
			}
			if src := metaOf(again, agentmcp.MetaSource); src != "replayed" || again.IsError {
				t.Errorf("third call: source %q, IsError %v (%s); want replayed success", src, again.IsError, text(again))
			}
			if n := p.charges.Load(); n != 1 {
				t.Errorf("charges = %d; want 1", n)
			}
		})
	}
}

// A client that loses its connection during a charge and reconnects (a
// new transport session) re-sends the call with the same _meta scope: the
// charge happens once. The scope, not the transport session, is the
// conversation: a different turn is a new intent and charges again.
func TestReconnectSameScope(t *testing.T) {
	for _, version := range protocols {
		t.Run("protocol="+version, func(t *testing.T) {
			p := newPayments(t, true)
			f := newFixture(t, chargeTool(p))
			scope := agentmcp.Scope{Tenant: "acme", Session: "conv-7", Turn: "3"}

			cs1 := f.connect(t, version)
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := cs1.CallTool(ctx, chargeParams(scope, 1200))
				first <- err
			}()
			wait(t, p.started, "the charge to start downstream")
			// The client gives up on the call, ends its transport session
			// and comes back with a new one.
			cancel()
			<-first
			f.awaitGiveUp(t, p)
			if err := cs1.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}

			cs2 := f.connect(t, version)
			if version != "" && (cs1.ID() == "" || cs1.ID() == cs2.ID()) {
				t.Fatalf("transport session ids %q and %q; want two distinct ids", cs1.ID(), cs2.ID())
			}
			retry := make(chan *sdk.CallToolResult, 1)
			go func() {
				res, err := cs2.CallTool(context.Background(), chargeParams(scope, 1200))
				if err != nil {
					t.Errorf("CallTool after reconnect: %v", err)
				}
				retry <- res
			}()
			close(p.gate)
			if res := <-retry; res != nil {
				if res.IsError || !strings.Contains(text(res), `"ch_1"`) {
					t.Errorf("after reconnect: IsError %v, text %s; want the first charge", res.IsError, text(res))
				}
				if src := metaOf(res, agentmcp.MetaSource); src != "collapsed" && src != "replayed" {
					t.Errorf("after reconnect: source %q; want collapsed or replayed", src)
				}
			}
			if n := p.charges.Load(); n != 1 {
				t.Errorf("charges after reconnect = %d; want 1", n)
			}

			next := scope
			next.Turn = "4"
			res, err := cs2.CallTool(context.Background(), chargeParams(next, 1200))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || metaOf(res, agentmcp.MetaSource) != "executed" {
				t.Errorf("next turn: IsError %v, source %q; want a new executed charge", res.IsError, metaOf(res, agentmcp.MetaSource))
			}
			if n := p.charges.Load(); n != 2 {
				t.Errorf("charges after the next turn = %d; want 2", n)
			}
		})
	}
}

// A call whose _meta does not place it is a tool error that names the
// missing keys, and nothing runs: no journal record, no charge.
func TestMissingScope(t *testing.T) {
	p := newPayments(t, false)
	f := newFixture(t, chargeTool(p))
	cs := f.connect(t, "")
	tests := []struct {
		name    string
		meta    map[string]any
		missing []string
		invalid []string
	}{
		{"no turn", map[string]any{agentmcp.MetaTenant: "acme", agentmcp.MetaSession: "s"}, []string{agentmcp.MetaTurn}, nil},
		{"empty session", map[string]any{agentmcp.MetaTenant: "acme", agentmcp.MetaSession: "", agentmcp.MetaTurn: "1"}, []string{agentmcp.MetaSession}, nil},
		{"turn not a string", map[string]any{agentmcp.MetaTenant: "acme", agentmcp.MetaSession: "s", agentmcp.MetaTurn: true}, nil, []string{agentmcp.MetaTurn}},
		{"turn only", map[string]any{agentmcp.MetaTenant: "acme", agentmcp.MetaTurn: "1"}, []string{agentmcp.MetaSession}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := &sdk.CallToolParams{Name: "charge_card", Arguments: map[string]any{"amount": 5}, Meta: tc.meta}
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatalf("CallTool: %v; want a tool error, not a protocol error", err)
			}
			if !res.IsError {
				t.Errorf("IsError = false; want true")
			}
			for _, k := range tc.missing {
				if !strings.Contains(text(res), "missing _meta keys") || !strings.Contains(text(res), k) {
					t.Errorf("text %q does not name missing key %s", text(res), k)
				}
			}
			for _, k := range tc.invalid {
				if !strings.Contains(text(res), "not strings: "+k) {
					t.Errorf("text %q does not name invalid key %s", text(res), k)
				}
			}
			if got := metaOf(res, agentmcp.MetaStatus); got != "rejected" {
				t.Errorf("status = %q; want rejected", got)
			}
		})
	}
	if n := f.runs.Load(); n != 0 {
		t.Errorf("calls that reached the journal = %d; want 0", n)
	}
	if n := p.charges.Load(); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
}

// tools/list offers every harness tool with its description and schema; a
// tool without a schema is offered as an object.
func TestToolList(t *testing.T) {
	p := newPayments(t, false)
	bare := harness.Tool{Name: "ping", Effect: journal.Idempotent,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"pong"`), nil }}
	f := newFixture(t, chargeTool(p), bare)
	cs := f.connect(t, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		got[tool.Name] = tool.Description + " " + string(b)
	}
	want := map[string]string{
		"charge_card": `Charge the customer's card. {"properties":{"agentonce_repeat":` + repeatSchema + `,"amount":{"type":"integer"}},"required":["amount"],"type":"object"}`,
		"ping":        ` {"properties":{"agentonce_repeat":` + repeatSchema + `},"type":"object"}`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("tools/list %s = %q; want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tools/list = %v; want %d tools", got, len(want))
	}
}

// AddTools refuses a schema MCP cannot offer, and adds no tool then.
func TestAddToolsSchema(t *testing.T) {
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	if err := h.Register(
		harness.Tool{Name: "a_good", Effect: journal.Idempotent, Func: fn},
		harness.Tool{Name: "b_array", Effect: journal.Idempotent, Func: fn, Schema: json.RawMessage(`{"type":["object","null"]}`)},
	); err != nil {
		t.Fatal(err)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "v0"}, nil)
	err = agentmcp.AddTools(s, h, nil)
	if err == nil || !strings.Contains(err.Error(), "b_array") {
		t.Errorf("AddTools = %v; want an error naming b_array", err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.ListTools(context.Background(), nil); err == nil && len(res.Tools) != 0 {
		t.Errorf("tools after a refused AddTools = %d; want 0", len(res.Tools))
	}
}

// Each Status reaches the client as the documented IsError, with ForModel
// as the text: a failure says nothing was done; an unknown outcome says
// not to retry.
func TestStatusMapping(t *testing.T) {
	var runs atomic.Int64
	failing := harness.Tool{Name: "fail", Effect: journal.Keyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return nil, retryclass.Permanent(errors.New("card declined"))
		}}
	unknown := harness.Tool{Name: "lost", Effect: journal.Unkeyed, Settle: -1,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return nil, errors.New("connection reset after the request was sent")
		}}
	scalar := harness.Tool{Name: "count", Effect: journal.Idempotent,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`7`), nil
		}}
	f := newFixture(t, failing, unknown, scalar)
	cs := f.connect(t, "")
	scope := agentmcp.Scope{Tenant: "acme", Session: "s", Turn: "1"}
	tests := []struct {
		tool       string
		isError    bool
		status     string
		text       string
		structured bool
	}{
		{"fail", true, "failed", "nothing was done: card declined", false},
		{"lost", true, "unknown", "Do not retry it or change its input", false},
		{"count", false, "succeeded", "7", false},
		{"nope", true, "rejected", "rejected and did not run", false},
	}
	for _, tc := range tests {
		p := &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{}}
		agentmcp.SetScope(p, scope)
		res, err := cs.CallTool(context.Background(), p)
		if tc.tool == "nope" {
			// The SDK answers an unknown tool itself, before any handler.
			if err == nil {
				t.Errorf("CallTool(nope) = nil error; want the SDK's unknown-tool error")
			}
			continue
		}
		if err != nil {
			t.Fatalf("CallTool(%s): %v", tc.tool, err)
		}
		if res.IsError != tc.isError || metaOf(res, agentmcp.MetaStatus) != tc.status || !strings.Contains(text(res), tc.text) {
			t.Errorf("CallTool(%s) = IsError %v, status %q, text %q; want %v, %q, containing %q",
				tc.tool, res.IsError, metaOf(res, agentmcp.MetaStatus), text(res), tc.isError, tc.status, tc.text)
		}
		if (res.StructuredContent != nil) != tc.structured {
			t.Errorf("CallTool(%s) structured content = %v; want present %v", tc.tool, res.StructuredContent, tc.structured)
		}
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("tool runs = %d; want 3", n)
	}
}

// Options.MaxCall bounds a detached call: a tool that never answers is
// cancelled once it has passed, and the client is told the action is in
// progress, not that it failed. The budget runs on synctest's clock, so a
// loaded machine that is slow to reach the tool cannot spend it first.
func TestMaxCallBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan struct{})
		tool := harness.Tool{Name: "hang", Effect: journal.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			}}
		h := harness.New(memory.New(nil), nil)
		defer h.Close()
		if err := h.Register(tool); err != nil {
			t.Fatal(err)
		}
		s := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "v0"}, nil)
		if err := agentmcp.AddTools(s, h, &agentmcp.Options{MaxCall: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		ct, st := sdk.NewInMemoryTransports()
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		p := &sdk.CallToolParams{Name: "hang", Arguments: map[string]any{}}
		agentmcp.SetScope(p, agentmcp.Scope{Tenant: "acme", Session: "s", Turn: "1"})
		res, err := cs.CallTool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || metaOf(res, agentmcp.MetaStatus) != "in-progress" {
			t.Errorf("CallTool past MaxCall = IsError %v, status %q (%s); want an in-progress error", res.IsError, metaOf(res, agentmcp.MetaStatus), text(res))
		}
		<-cancelled
	})
}

// repeatSchema is the RepeatArgument property every tool is offered with.
const repeatSchema = `{"description":"Leave this out. Set it, to a value not used before, only to do again on purpose an action already done with the same input.","type":"string"}`
