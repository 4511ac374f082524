package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/mcpcall"
	"github.com/agentonce/agentonce/retryclass"
)

// Wrap protects the tools already added to s (sdk.AddTool, Server.AddTool),
// as they are: their definitions, schemas and handlers stay the server's,
// and tools/list is unchanged. Every call of one then runs through h,
// placed as AddTools places a call (Options.Identity, the _meta scope, or
// the de-duplication window), so a repeated call runs the handler once and
// is answered with the result it gave; a call whose outcome is unknown is
// answered so, not run again.
//
// Wrap reads the server's tools with a tools/list over an in-memory
// session, registers each on h under its name with the effect kind
// Options.Effects gives it (journal.Unkeyed when not named), and adds a
// receiving middleware (Server.AddReceivingMiddleware) that sends their
// calls through h. Call it after adding the tools: one added later is
// served as it is. It is an error if Options.Effects names a tool s does
// not have, or one AddTools serves (a harness tool has its own Effect), or
// if h already has a tool of a wrapped tool's name.
//
// A handler's result is the call's outcome, journaled and answered again
// as it was to a repeat. A Go error or a result with IsError (the go-sdk
// makes every error of a typed handler one) is a failure the harness cannot
// place: it may have taken effect, so an Unkeyed tool's outcome is unknown
// and the tool is not run again, while the harness retries a tool of
// another kind. The model may send RepeatArgument (the note of a repeated
// call says how) although the tool's schema does not offer it: it is taken
// out of the arguments before the handler sees them.
func Wrap(s *sdk.Server, h *harness.Harness, opts *Options) error {
	if s == nil || h == nil {
		return errors.New("agentonce mcp: Wrap needs a server and a harness")
	}
	tools, err := listTools(s)
	if err != nil {
		return err
	}
	served := map[string]bool{}
	for _, t := range h.Tools() {
		served[t.Name] = true
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	for _, name := range slices.Sorted(maps.Keys(o.Effects)) {
		if _, ok := tools[name]; !ok {
			return fmt.Errorf("agentonce mcp: Options.Effects names tool %q, which the server does not have (its tools: %s)",
				name, strings.Join(slices.Sorted(maps.Keys(tools)), ", "))
		}
		if served[name] {
			return fmt.Errorf("agentonce mcp: Options.Effects names tool %q, a harness tool, whose effect kind is its Tool.Effect", name)
		}
	}
	wrapped := map[string]bool{}
	var reg []harness.Tool
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if served[name] {
			continue
		}
		wrapped[name] = true
		reg = append(reg, harness.Tool{Name: name, Description: tools[name].Description,
			Effect: o.Effects[name], Func: runHandler(name)})
	}
	if err := h.Register(reg...); err != nil {
		return fmt.Errorf("agentonce mcp: Wrap: %w", err)
	}
	sv := newServer(h, opts)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			cr, ok := req.(*sdk.CallToolRequest)
			if method != "tools/call" || !ok || cr.Params == nil || !wrapped[cr.Params.Name] {
				return next(ctx, method, req)
			}
			call, refused := sv.place(ctx, cr.Params.Name, cr)
			if refused != nil {
				return refused, nil
			}
			ctx = context.WithValue(ctx, pendingKey{}, pending{next: next, req: cr})
			res, err := detached(ctx, h, call, sv.maxCall, wrappedResult)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	})
	return nil
}

// listTools is the tools s lists, asked over an in-memory session: the
// SDK offers no other way to read them.
func listTools(s *sdk.Server) (map[string]*sdk.Tool, error) {
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("agentonce mcp: Wrap: reading the server's tools: %w", err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agentonce-wrap", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("agentonce mcp: Wrap: reading the server's tools: %w", err)
	}
	defer cs.Close()
	tools := map[string]*sdk.Tool{}
	if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Tools == nil {
		return tools, nil
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("agentonce mcp: Wrap: reading the server's tools: %w", err)
		}
		tools[t.Name] = t
	}
	return tools, nil
}

// pendingKey marks, in the context of a call of a wrapped tool, the
// server's handler and the request it is to run with.
type pendingKey struct{}

type pending struct {
	next sdk.MethodHandler
	req  *sdk.CallToolRequest
}

// runHandler is a wrapped tool's harness Func: it runs the server's
// handler with the input the harness keyed (RepeatArgument taken out) and
// journals the result it gives.
func runHandler(tool string) harness.Func {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		p, ok := ctx.Value(pendingKey{}).(pending)
		if !ok {
			return nil, retryclass.MarkNotExecuted(fmt.Errorf("agentonce mcp: tool %s runs the MCP server's handler, so only in a tools/call the server received", tool))
		}
		params := *p.req.Params
		params.Arguments = input
		req := *p.req
		req.Params = &params
		res, err := p.next(ctx, "tools/call", &req)
		if err != nil {
			return nil, err
		}
		r, ok := res.(*sdk.CallToolResult)
		if !ok || r == nil {
			return nil, fmt.Errorf("agentonce mcp: tool %s: the handler returned no result and no error", tool)
		}
		if r.IsError {
			return nil, fmt.Errorf("tool %s answered an error: %s", tool, resultText(r.Content))
		}
		return json.Marshal(r)
	}
}

// resultText is the text of a result's text contents.
func resultText(content []sdk.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wrappedResult answers a call of a wrapped tool: the handler's result as
// it gave it, with the harness's _meta and, for a repeat placed by the
// window, the note saying so; any other outcome as AddTools's tools
// answer it.
func wrappedResult(res harness.Result, call mcpcall.Call) *sdk.CallToolResult {
	var out sdk.CallToolResult
	if !res.OK() || json.Unmarshal(res.Output, &out) != nil {
		return toResult(res, call)
	}
	if out.Meta == nil {
		out.Meta = sdk.Meta{}
	}
	maps.Copy(out.Meta, mcpcall.AnswerOf(res, call).Meta)
	if note := mcpcall.Note(res, call); note != "" {
		out.Content = append(out.Content, &sdk.TextContent{Text: note})
	}
	return &out
}
