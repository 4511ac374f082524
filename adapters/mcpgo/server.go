package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/mcpcall"
)

// DefaultMaxCall is Options.MaxCall's default.
const DefaultMaxCall = 5 * time.Minute

// Identity is the caller as authentication established it.
type Identity = mcpcall.Identity

// ErrNoIdentity is returned by HTTPServer, and its text answered to a call
// that arrived over HTTP, when the Options have no Identity and do not say
// TrustClientScope.
var ErrNoIdentity = errors.New("agentonce mcpgo: a network listener needs Options.Identity (the tenant and principal from authentication) or Options.TrustClientScope")

// Options configure the tools AddTools and Handler serve. A nil *Options
// means every default.
type Options struct {
	// Identity gives each call's tenant and principal from the request's
	// authentication (see BearerIdentity). The client's session and turn
	// are then scoped under the principal and the _meta tenant is not
	// read. An error is answered as a tool error and the tool does not
	// run. Nil means the client is trusted (the _meta tenant, no
	// principal), which a call that arrived over HTTP gets only with
	// TrustClientScope.
	Identity func(ctx context.Context, req mcp.CallToolRequest) (Identity, error)
	// TrustClientScope says every client that can reach the listener may
	// name any tenant, session and turn. stdio is trusted by default: its
	// one client is the process that started the server.
	TrustClientScope bool
	// Window is how long identical calls without a scope in _meta are one
	// intent. Zero means mcpcall.DefaultWindow.
	Window time.Duration
	// MaxCall bounds a call from its start, whatever the client does (the
	// call runs on a context the client's cancellation does not reach).
	// Zero means DefaultMaxCall.
	MaxCall time.Duration
	// Tasks offers every tool for task-augmented execution (the MCP tasks
	// utility, taskSupport "optional"); the server must be made with
	// server.WithTaskCapabilities(…, true). A call made as a task runs
	// while the host polls tasks/get, and the task stays working while the
	// harness answers that the intent is under way (mcpcall.UnderWay),
	// re-asking it until it has an outcome or MaxCall has passed.
	Tasks bool
	// Effects gives Wrap the effect kind of each wrapped tool, by name; a
	// tool not named is journal.Unkeyed, the safest. Wrap refuses a name
	// that is not one of the server's tools. AddTools does not read it: a
	// harness tool has its own Effect.
	Effects map[string]journal.Effect
	// Logger hears the warnings of AddTools (a tool offered without an
	// input schema or a description). Nil means slog.Default().
	Logger *slog.Logger
}

// Task re-asks an intent that is under way after a pause that grows from
// taskPollMin to taskPollMax.
const (
	taskPollMin = 50 * time.Millisecond
	taskPollMax = 2 * time.Second
)

type srv struct {
	h        *harness.Harness
	resolver *mcpcall.Resolver
	identity func(context.Context, mcp.CallToolRequest) (Identity, error)
	trusted  bool
	tasks    bool
	maxCall  time.Duration
}

func newSrv(h *harness.Harness, opts *Options) *srv {
	s := &srv{h: h, maxCall: DefaultMaxCall}
	ropts := &mcpcall.Options{}
	if opts != nil {
		s.identity, s.trusted, s.tasks, ropts.Window = opts.Identity, opts.TrustClientScope, opts.Tasks, opts.Window
		if opts.MaxCall > 0 {
			s.maxCall = opts.MaxCall
		}
	}
	s.resolver = mcpcall.NewResolver(h, ropts)
	return s
}

// AddTools registers every tool of h on s with its name, description, input
// schema (with mcpcall.RepeatArgument added) and annotations
// (mcpcall.HintsOf), served by Handler. The input schema is Tool.Schema,
// else derived from Tool.InputType (set by harness.Typed); a tool with
// neither, or with no description, is offered anyway and Options.Logger
// warns of it. It adds nothing and returns an error if a schema is not a
// JSON object of type "object" or cannot be derived.
func AddTools(s *server.MCPServer, h *harness.Harness, opts *Options) error {
	var tools []server.ServerTool
	sv := newSrv(h, opts)
	for _, t := range h.Tools() {
		d, err := Definition(t)
		if err != nil {
			return err
		}
		warnBare(logger(opts), t)
		if sv.tasks {
			d.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
		}
		tools = append(tools, server.ServerTool{Tool: d, Handler: sv.handler(t.Name)})
	}
	s.AddTools(tools...)
	return nil
}

// Definition is the mcp-go tool definition AddTools offers for t, its input
// schema derived from t.InputType when t.Schema is empty.
func Definition(t harness.Tool) (mcp.Tool, error) {
	t, err := withSchema(t)
	if err != nil {
		return mcp.Tool{}, err
	}
	schema, err := mcpcall.InputSchema(t)
	if err != nil {
		return mcp.Tool{}, err
	}
	hints := mcpcall.HintsOf(t.Effect)
	return mcp.Tool{
		Name: t.Name, Description: t.Description, RawInputSchema: schema,
		Annotations: mcp.ToolAnnotation{ReadOnlyHint: hints.ReadOnly, DestructiveHint: hints.Destructive,
			IdempotentHint: hints.Idempotent, OpenWorldHint: hints.OpenWorld},
		Meta: &mcp.Meta{AdditionalFields: map[string]any{mcpcall.MetaDedupes: true}},
	}, nil
}

// Handler serves calls of the harness tool named tool, as AddTools does.
func Handler(h *harness.Harness, tool string, opts *Options) server.ToolHandlerFunc {
	return newSrv(h, opts).handler(tool)
}

func (s *srv) handler(tool string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.serve(ctx, tool, req, nil)
	}
}

// serve places a call of tool and runs it through the harness. next is
// the server's own handler of a wrapped tool (Wrap), nil for a harness
// tool: the harness's Func for it runs next with the request, and its
// result is answered as next gave it.
func (s *srv) serve(ctx context.Context, tool string, req mcp.CallToolRequest, next server.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	asTask := s.tasks && req.Params.Task != nil && next == nil
	if asTask {
		// mcp-go runs a task's handler on the context of the request
		// that created it, which ends as soon as the task is created;
		// the task is over when the call is, within MaxCall.
		ctx = context.WithoutCancel(ctx)
	}
	call, refused := s.place(ctx, tool, req)
	if refused != nil {
		return refused, nil
	}
	if next != nil {
		ctx = context.WithValue(ctx, pendingKey{}, pending{next: next, req: req})
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.maxCall)
	answered := make(chan harness.Result, 1)
	go func() {
		defer cancel()
		answered <- s.call(cctx, call, asTask)
	}()
	select {
	case res := <-answered:
		if next != nil {
			return wrappedResult(res, call), nil
		}
		return toResult(mcpcall.AnswerOf(res, call)), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("agentonce: tool %s: the request ended while the call was running; it goes on, and the same call again is answered with its outcome: %w",
			tool, context.Cause(ctx))
	}
}

// place reads the request's identity, _meta and arguments and places the
// call; a call that cannot be placed gets the refusal to answer.
func (s *srv) place(ctx context.Context, tool string, req mcp.CallToolRequest) (mcpcall.Call, *mcp.CallToolResult) {
	r := mcpcall.Request{Tool: tool, Arguments: req.Params.RawArguments}
	if req.Params.Meta != nil {
		r.Meta = req.Params.Meta.AdditionalFields
	}
	if len(r.Arguments) == 0 && req.Params.Arguments != nil {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return mcpcall.Call{}, toResult(mcpcall.Refusal(fmt.Errorf("agentonce: tool %s: arguments: %w", tool, err)))
		}
		r.Arguments = b
	}
	switch {
	case s.identity != nil:
		id, err := s.identity(ctx, req)
		if err != nil {
			return mcpcall.Call{}, toResult(mcpcall.Refusal(fmt.Errorf("agentonce: tool %s: the caller is not identified, so the tool did not run: %w", tool, err)))
		}
		r.Identity = &id
	case !s.trusted && len(req.Header) > 0:
		// mcp-go gives a request an empty Header on stdio, the headers
		// of its POST over HTTP.
		return mcpcall.Call{}, toResult(mcpcall.Refusal(fmt.Errorf("agentonce: tool %s: %w; the tool did not run", tool, ErrNoIdentity)))
	}
	call, err := s.resolver.Resolve(ctx, r)
	if err != nil {
		return mcpcall.Call{}, toResult(mcpcall.Refusal(err))
	}
	return call, nil
}

// call runs the call; as a task, it re-asks an intent that is under way
// until it has an outcome or ctx ends.
func (s *srv) call(ctx context.Context, call mcpcall.Call, asTask bool) harness.Result {
	res := s.h.Call(ctx, call.ToolCall)
	for pause := taskPollMin; asTask && mcpcall.UnderWay(res); pause = min(2*pause, taskPollMax) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return res
		case <-t.C:
		}
		res = s.h.Call(ctx, call.ToolCall)
	}
	return res
}

func toResult(a mcpcall.Answer) *mcp.CallToolResult {
	out := &mcp.CallToolResult{
		Result:  mcp.Result{Meta: &mcp.Meta{AdditionalFields: a.Meta}},
		Content: []mcp.Content{mcp.NewTextContent(a.Text)},
		IsError: a.IsError,
	}
	if a.Structured != nil {
		out.StructuredContent = a.Structured
	}
	return out
}

// HTTPServer is mcp-go's streamable HTTP server for s, after checking that
// opts (those given to AddTools) identify the caller: it returns
// ErrNoIdentity when they have neither Identity nor TrustClientScope.
func HTTPServer(s *server.MCPServer, opts *Options, httpOpts ...server.StreamableHTTPOption) (*server.StreamableHTTPServer, error) {
	if opts == nil || (opts.Identity == nil && !opts.TrustClientScope) {
		return nil, ErrNoIdentity
	}
	return server.NewStreamableHTTPServer(s, httpOpts...), nil
}

// BearerIdentity is an Options.Identity that verifies the request's
// "Authorization: Bearer" token with verify, which returns the token's
// tenant and subject. A request without a bearer token is refused.
func BearerIdentity(verify func(ctx context.Context, token string) (Identity, error)) func(context.Context, mcp.CallToolRequest) (Identity, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (Identity, error) {
		token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			return Identity{}, errors.New("no bearer token")
		}
		return verify(ctx, token)
	}
}
