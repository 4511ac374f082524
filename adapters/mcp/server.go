package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/mcpcall"
)

// DefaultMaxCall is Options.MaxCall's default.
const DefaultMaxCall = 5 * time.Minute

// Options configure the tools AddTools and Handler serve. A nil *Options
// means every default.
type Options struct {
	// Identity gives each call's tenant and principal from the request's
	// authentication (req.Extra.TokenInfo; see TokenIdentity). The
	// client's session and turn are then scoped under the principal and
	// MetaTenant is not read. An error is answered as a tool error and the
	// tool does not run. Nil means the client is trusted: the tenant is
	// MetaTenant's and there is no principal, which a call that arrived
	// over HTTP gets only with TrustClientScope.
	Identity func(ctx context.Context, req *sdk.CallToolRequest) (Identity, error)
	// TrustClientScope says every client that can reach the listener may
	// name any tenant, session and turn (a private network of the
	// operator's own agents). Without it, and without Identity, a call
	// that arrived over HTTP is refused with ErrNoIdentity. stdio and
	// in-memory transports are trusted by default: their one client is
	// the process that started the server.
	TrustClientScope bool
	// Window is how long identical calls without a scope in _meta (as
	// standard hosts send them) are one intent; see mcpcall.Options.
	// Zero means mcpcall.DefaultWindow.
	Window time.Duration
	// MaxCall bounds a call from its start, whatever the client does: the
	// call runs on a context that the client's cancellation does not reach
	// (a client that gives up and retries must find the first attempt
	// still running, or finished, not killed half-way), and MaxCall is how
	// long that context lasts. The tool's own Timeout and retry policy
	// normally end a call well before. Zero means DefaultMaxCall.
	MaxCall time.Duration
	// Effects gives Wrap the effect kind of each wrapped tool, by name; a
	// tool not named is journal.Unkeyed, the safest. Wrap refuses a name
	// that is not one of the server's tools. AddTools does not read it: a
	// harness tool has its own Effect.
	Effects map[string]journal.Effect
	// Logger hears the warnings of AddTools (a tool offered without an
	// input schema or a description). Nil means slog.Default().
	Logger *slog.Logger
}

func (o *Options) maxCall() time.Duration {
	if o == nil || o.MaxCall <= 0 {
		return DefaultMaxCall
	}
	return o.MaxCall
}

// server is what every handler of one AddTools shares.
type server struct {
	h        *harness.Harness
	resolver *mcpcall.Resolver
	identity func(context.Context, *sdk.CallToolRequest) (Identity, error)
	trusted  bool
	maxCall  time.Duration
}

func newServer(h *harness.Harness, opts *Options) *server {
	s := &server{h: h, maxCall: opts.maxCall()}
	ropts := &mcpcall.Options{}
	if opts != nil {
		s.identity, s.trusted, ropts.Window = opts.Identity, opts.TrustClientScope, opts.Window
	}
	s.resolver = mcpcall.NewResolver(h, ropts)
	return s
}

// AddTools registers every tool of h (harness.Harness.Tools) on s, each
// with its name, description, input schema (with RepeatArgument added) and
// annotations (mcpcall.HintsOf), served by Handler. The input schema is
// Tool.Schema, else derived from Tool.InputType (set by harness.Typed),
// else {"type":"object"}; a tool with no schema or no description is
// offered anyway and Options.Logger warns of it. It adds nothing and
// returns an error if a schema is not a JSON object of type "object",
// which MCP requires of an input schema, or cannot be derived.
func AddTools(s *sdk.Server, h *harness.Harness, opts *Options) error {
	tools := h.Tools()
	defs := make([]*sdk.Tool, 0, len(tools))
	for _, t := range tools {
		d, err := Definition(t)
		if err != nil {
			return err
		}
		warnBare(logger(opts), t)
		defs = append(defs, d)
	}
	srv := newServer(h, opts)
	for _, d := range defs {
		s.AddTool(d, srv.handler(d.Name))
	}
	return nil
}

// Definition is the MCP tool definition AddTools offers for t, its input
// schema derived from t.InputType when t.Schema is empty.
func Definition(t harness.Tool) (*sdk.Tool, error) {
	t, err := withSchema(t)
	if err != nil {
		return nil, err
	}
	schema, err := mcpcall.InputSchema(t)
	if err != nil {
		return nil, err
	}
	hints := mcpcall.HintsOf(t.Effect)
	return &sdk.Tool{
		Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(schema),
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint: *hints.ReadOnly, IdempotentHint: *hints.Idempotent,
			DestructiveHint: hints.Destructive, OpenWorldHint: hints.OpenWorld,
		},
		Meta: sdk.Meta{MetaDedupes: true},
	}, nil
}

// Handler serves calls of the harness tool named tool: it places the call
// (mcpcall.Resolver.Resolve: identity, _meta scope or the de-duplication
// window), runs harness.Harness.Call on a context detached from the
// request's cancellation and bounded by Options.MaxCall, and answers the
// Result as a CallToolResult (mcpcall.AnswerOf). Use it to register a tool
// with a definition of your own; AddTools uses it for every tool. Handlers
// made by separate calls keep separate windows in memory (the journal is
// shared); AddTools's share one.
func Handler(h *harness.Harness, tool string, opts *Options) sdk.ToolHandler {
	return newServer(h, opts).handler(tool)
}

func (s *server) handler(tool string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		call, refused := s.place(ctx, tool, req)
		if refused != nil {
			return refused, nil
		}
		return detached(ctx, s.h, call, s.maxCall, toResult)
	}
}

// place reads the request's identity, _meta and arguments and places the
// call; a call that cannot be placed gets the refusal to answer.
func (s *server) place(ctx context.Context, tool string, req *sdk.CallToolRequest) (mcpcall.Call, *sdk.CallToolResult) {
	r := mcpcall.Request{Tool: tool}
	if req.Params != nil {
		r.Meta, r.Arguments = req.Params.GetMeta(), req.Params.Arguments
	}
	switch {
	case s.identity != nil:
		id, err := s.identity(ctx, req)
		if err != nil {
			return mcpcall.Call{}, answerResult(mcpcall.Refusal(fmt.Errorf("agentonce: tool %s: the caller is not identified, so the tool did not run: %w", tool, err)))
		}
		r.Identity = &id
	case !s.trusted && req.Extra != nil && (req.Extra.Header != nil || req.Extra.TokenInfo != nil):
		return mcpcall.Call{}, answerResult(mcpcall.Refusal(fmt.Errorf("agentonce: tool %s: %w; the tool did not run", tool, ErrNoIdentity)))
	}
	call, err := s.resolver.Resolve(ctx, r)
	if err != nil {
		return mcpcall.Call{}, answerResult(mcpcall.Refusal(err))
	}
	return call, nil
}

// detached runs the call so that it outlives the request: a client that
// gives up (a timeout, a closed connection, an ended session) must not
// kill an effect half-way, and its retry then joins the call or reads its
// outcome. The handler itself returns when the request ends, so that the
// SDK can close a session without waiting for the call; the call goes on
// until it is answered or maxCall has passed since its start. answer words
// the Result.
func detached(ctx context.Context, h *harness.Harness, call mcpcall.Call, maxCall time.Duration,
	answer func(harness.Result, mcpcall.Call) *sdk.CallToolResult) (*sdk.CallToolResult, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxCall)
	answered := make(chan harness.Result, 1)
	go func() {
		defer cancel()
		answered <- h.Call(cctx, call.ToolCall)
	}()
	select {
	case res := <-answered:
		return answer(res, call), nil
	case <-ctx.Done():
		// Nobody reads this answer: the request is over.
		return nil, fmt.Errorf("agentonce: tool %s: the request ended while the call was running; it goes on, and the same call again is answered with its outcome: %w",
			call.Tool, context.Cause(ctx))
	}
}

// CallToolResult turns a harness Result into the CallToolResult the client
// gets (mcpcall.AnswerOf): the text content is Result.ForModel, IsError is
// set unless the intent succeeded, the structured content is the output of
// a success that is a JSON object, and the result's _meta carries
// MetaStatus, MetaSource and MetaKey for the client program.
func CallToolResult(res harness.Result) *sdk.CallToolResult {
	return toResult(res, mcpcall.Call{})
}

// toResult answers a call of a harness tool (mcpcall.AnswerOf).
func toResult(res harness.Result, call mcpcall.Call) *sdk.CallToolResult {
	return answerResult(mcpcall.AnswerOf(res, call))
}

func answerResult(a mcpcall.Answer) *sdk.CallToolResult {
	out := &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: a.Text}},
		IsError: a.IsError,
		Meta:    sdk.Meta(a.Meta),
	}
	if a.Structured != nil {
		out.StructuredContent = a.Structured
	}
	return out
}

// HTTPHandler is the SDK's Streamable HTTP handler serving s, after
// checking that opts (those given to AddTools) identify the caller: it
// returns ErrNoIdentity when they have neither Identity nor
// TrustClientScope. Wrap it in the authentication that Identity reads
// (auth.RequireBearerToken for TokenIdentity).
func HTTPHandler(s *sdk.Server, opts *Options, httpOpts *sdk.StreamableHTTPOptions) (http.Handler, error) {
	if opts == nil || (opts.Identity == nil && !opts.TrustClientScope) {
		return nil, ErrNoIdentity
	}
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, httpOpts), nil
}

// TokenIdentity is an Options.Identity that reads the bearer token's
// verified information (req.Extra.TokenInfo, which auth.RequireBearerToken
// sets): the principal is its UserID (the token's subject), the tenant its
// Extra[tenantClaim] (a string; with tenantClaim "" every caller is in
// tenant ""). A call without a token, a UserID or the claim is refused.
func TokenIdentity(tenantClaim string) func(context.Context, *sdk.CallToolRequest) (Identity, error) {
	return func(_ context.Context, req *sdk.CallToolRequest) (Identity, error) {
		var ti *auth.TokenInfo
		if req.Extra != nil {
			ti = req.Extra.TokenInfo
		}
		if ti == nil {
			return Identity{}, errors.New("no verified bearer token")
		}
		if ti.UserID == "" {
			return Identity{}, errors.New("the bearer token names no user (TokenInfo.UserID)")
		}
		id := Identity{Principal: ti.UserID}
		if tenantClaim != "" {
			t, ok := ti.Extra[tenantClaim].(string)
			if !ok || t == "" {
				return Identity{}, fmt.Errorf("the bearer token has no %q claim naming a tenant", tenantClaim)
			}
			id.Tenant = t
		}
		return id, nil
	}
}
