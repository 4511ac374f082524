package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/mcpcall"
	"github.com/agentonce/agentonce/retryclass"
)

// Wrap protects the tools already added to s (MCPServer.AddTool), as they
// are: their definitions, schemas and handlers stay the server's, and
// tools/list is unchanged. Every call of one then runs through h, placed as
// AddTools places a call (Options.Identity, the _meta scope, or the
// de-duplication window), so a repeated call runs the handler once and is
// answered with the result it gave; a call whose outcome is unknown is
// answered so, not run again.
//
// Each tool is registered on h under its name with the effect kind
// Options.Effects gives it (journal.Unkeyed when not named), and s gets a
// tool handler middleware (MCPServer.Use) that sends their calls through
// h. Call Wrap after adding the tools: one added later is served as it is.
// It is an error if Options.Effects names a tool s does not have, or one
// AddTools serves (a harness tool has its own Effect), or if h already has
// a tool of a wrapped tool's name.
//
// A handler's result is the call's outcome, journaled and answered again
// as it was to a repeat. A Go error or a result with IsError (the go-sdk
// makes every error of a typed handler one) is a failure the harness cannot
// place: it may have taken effect, so an Unkeyed tool's outcome is unknown
// and the tool is not run again, while the harness retries a tool of
// another kind. The model may send mcpcall.RepeatArgument (the note of a repeated
// call says how) although the tool's schema does not offer it: it is taken
// out of the arguments before the handler sees them.
func Wrap(s *server.MCPServer, h *harness.Harness, opts *Options) error {
	if s == nil || h == nil {
		return errors.New("agentonce mcpgo: Wrap needs a server and a harness")
	}
	tools := s.ListTools()
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
			return fmt.Errorf("agentonce mcpgo: Options.Effects names tool %q, which the server does not have (its tools: %s)",
				name, strings.Join(slices.Sorted(maps.Keys(tools)), ", "))
		}
		if served[name] {
			return fmt.Errorf("agentonce mcpgo: Options.Effects names tool %q, a harness tool, whose effect kind is its Tool.Effect", name)
		}
	}
	wrapped := map[string]bool{}
	var reg []harness.Tool
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if served[name] {
			continue
		}
		wrapped[name] = true
		reg = append(reg, harness.Tool{Name: name, Description: tools[name].Tool.Description,
			Effect: o.Effects[name], Func: runHandler(name)})
	}
	if err := h.Register(reg...); err != nil {
		return fmt.Errorf("agentonce mcpgo: Wrap: %w", err)
	}
	sv := newSrv(h, opts)
	s.Use(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !wrapped[req.Params.Name] {
				return next(ctx, req)
			}
			return sv.serve(ctx, req.Params.Name, req, next)
		}
	})
	return nil
}

// pendingKey marks, in the context of a call of a wrapped tool, the
// server's handler and the request it is to run with.
type pendingKey struct{}

type pending struct {
	next server.ToolHandlerFunc
	req  mcp.CallToolRequest
}

// runHandler is a wrapped tool's harness Func: it runs the server's
// handler with the input the harness keyed (RepeatArgument taken out) and
// journals the result it gives.
func runHandler(tool string) harness.Func {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		p, ok := ctx.Value(pendingKey{}).(pending)
		if !ok {
			return nil, retryclass.MarkNotExecuted(fmt.Errorf("agentonce mcpgo: tool %s runs the MCP server's handler, so only in a tools/call the server received", tool))
		}
		req := p.req
		var args any
		if err := json.Unmarshal(input, &args); err != nil {
			return nil, retryclass.Permanent(fmt.Errorf("agentonce mcpgo: tool %s: arguments: %w", tool, err))
		}
		req.Params.Arguments, req.Params.RawArguments = args, input
		res, err := p.next(ctx, req)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, fmt.Errorf("agentonce mcpgo: tool %s: the handler returned no result and no error", tool)
		}
		if res.IsError {
			return nil, fmt.Errorf("tool %s answered an error: %s", tool, resultText(res.Content))
		}
		return json.Marshal(res)
	}
}

// resultText is the text of a result's text contents.
func resultText(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wrappedResult answers a call of a wrapped tool: the handler's result as
// it gave it, with the harness's _meta and, for a repeat placed by the
// window, the note saying so; any other outcome as AddTools's tools
// answer it.
func wrappedResult(res harness.Result, call mcpcall.Call) *mcp.CallToolResult {
	a := mcpcall.AnswerOf(res, call)
	var out mcp.CallToolResult
	if !res.OK() || json.Unmarshal(res.Output, &out) != nil {
		return toResult(a)
	}
	if out.Meta == nil {
		out.Meta = &mcp.Meta{}
	}
	if out.Meta.AdditionalFields == nil {
		out.Meta.AdditionalFields = map[string]any{}
	}
	maps.Copy(out.Meta.AdditionalFields, a.Meta)
	if note := mcpcall.Note(res, call); note != "" {
		out.Content = append(out.Content, mcp.NewTextContent(note))
	}
	return &out
}
