package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce/harness"
)

// DefaultMaxCall is Options.MaxCall's default.
const DefaultMaxCall = 5 * time.Minute

// Options configure the tools AddTools and Handler serve. A nil *Options
// means every default.
type Options struct {
	// Tenant, when set, gives each call's tenant, typically from the
	// request's authentication (req.Extra.TokenInfo); the MetaTenant key is
	// then neither needed nor read. An error is answered as a tool error
	// and the tool does not run. Nil means the tenant is read from
	// MetaTenant, which the client asserts.
	Tenant func(ctx context.Context, req *sdk.CallToolRequest) (string, error)
	// MaxCall bounds a call from its start, whatever the client does: the
	// call runs on a context that the client's cancellation does not reach
	// (a client that gives up and retries must find the first attempt
	// still running, or finished, not killed half-way), and MaxCall is how
	// long that context lasts. The tool's own Timeout and retry policy
	// normally end a call well before. Zero means DefaultMaxCall.
	MaxCall time.Duration
}

func (o *Options) maxCall() time.Duration {
	if o == nil || o.MaxCall <= 0 {
		return DefaultMaxCall
	}
	return o.MaxCall
}

// AddTools registers every tool of h (harness.Harness.Tools) on s, each
// with its name, description and input schema, served by Handler. A tool
// without a Schema is offered as {"type":"object"}. It adds nothing and
// returns an error if a schema is not a JSON object of type "object", which
// MCP requires of an input schema.
func AddTools(s *sdk.Server, h *harness.Harness, opts *Options) error {
	tools := h.Tools()
	defs := make([]*sdk.Tool, 0, len(tools))
	for _, t := range tools {
		d, err := definition(t)
		if err != nil {
			return err
		}
		defs = append(defs, d)
	}
	for _, d := range defs {
		s.AddTool(d, Handler(h, d.Name, opts))
	}
	return nil
}

// definition is the MCP tool definition of t.
func definition(t harness.Tool) (*sdk.Tool, error) {
	schema := t.Schema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var head struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(schema, &head); err != nil {
		return nil, fmt.Errorf("agentonce mcp: tool %s: input schema is not a JSON object: %w", t.Name, err)
	}
	if head.Type != "object" {
		return nil, fmt.Errorf("agentonce mcp: tool %s: input schema has type %v; MCP needs \"object\"", t.Name, head.Type)
	}
	return &sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}

// Handler serves calls of the harness tool named tool: it reads the scope
// from the request's _meta (see MetaTenant, MetaSession, MetaTurn), runs
// harness.Harness.Call on a context detached from the request's
// cancellation and bounded by Options.MaxCall, and answers the Result as a
// CallToolResult (see the package documentation for the mapping). Use it to
// register a tool with a definition of your own; AddTools uses it for
// every tool.
func Handler(h *harness.Harness, tool string, opts *Options) sdk.ToolHandler {
	var tenantOf func(context.Context, *sdk.CallToolRequest) (string, error)
	if opts != nil {
		tenantOf = opts.Tenant
	}
	maxCall := opts.maxCall()
	needTurn := !noTurn(h, tool)
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var meta map[string]any
		var args json.RawMessage
		if req.Params != nil {
			meta, args = req.Params.GetMeta(), req.Params.Arguments
		}
		scope, err := scopeOf(tool, meta, tenantOf == nil, needTurn)
		if err != nil {
			return refused(err), nil
		}
		if tenantOf != nil {
			if scope.Tenant, err = tenantOf(ctx, req); err != nil {
				return refused(fmt.Errorf("agentonce: tool %s: no tenant for the call, so the tool did not run: %w", tool, err)), nil
			}
		}
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage(`{}`)
		}
		call := harness.ToolCall{
			Tenant: scope.Tenant, Session: scope.Session, Turn: scope.Turn,
			Discriminator: scope.Discriminator, Tool: tool, Input: args,
		}
		return detached(ctx, h, call, maxCall)
	}
}

// detached runs the call so that it outlives the request: a client that
// gives up (a timeout, a closed connection, an ended session) must not
// kill an effect half-way, and its retry then joins the call or reads its
// outcome. The handler itself returns when the request ends, so that the
// SDK can close a session without waiting for the call; the call goes on
// until it is answered or maxCall has passed since its start.
func detached(ctx context.Context, h *harness.Harness, call harness.ToolCall, maxCall time.Duration) (*sdk.CallToolResult, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxCall)
	answered := make(chan harness.Result, 1)
	go func() {
		defer cancel()
		answered <- h.Call(cctx, call)
	}()
	select {
	case res := <-answered:
		return CallToolResult(res), nil
	case <-ctx.Done():
		// Nobody reads this answer: the request is over.
		return nil, fmt.Errorf("agentonce: tool %s: the request ended while the call was running; it goes on, and the same call again is answered with its outcome: %w",
			call.Tool, context.Cause(ctx))
	}
}

// noTurn reports whether the harness tool named tool may be called without
// a session or turn. A tool registered after Handler was made counts as
// needing both; an unregistered name is answered by the harness.
func noTurn(h *harness.Harness, tool string) bool {
	for _, t := range h.Tools() {
		if t.Name == tool {
			return t.NoTurn
		}
	}
	return false
}

// CallToolResult turns a harness Result into the CallToolResult the client gets:
// the text content is Result.ForModel, IsError is set unless the intent
// succeeded, the structured content is the output of a success that is a
// JSON object, and the result's _meta carries MetaStatus, MetaSource and
// MetaKey for the client program.
func CallToolResult(res harness.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: res.ForModel()}},
		IsError: !res.OK(),
		Meta:    sdk.Meta{MetaStatus: res.Status.String(), MetaSource: res.Source.String()},
	}
	if res.Key != uuid.Nil {
		out.Meta[MetaKey] = res.Key.String()
	}
	if res.OK() && isObject(res.Output) {
		out.StructuredContent = res.Output
	}
	return out
}

// refused is the tool error for a call that was not run.
func refused(err error) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}},
		IsError: true,
		Meta:    sdk.Meta{MetaStatus: harness.Rejected.String(), MetaSource: harness.NoSource.String()},
	}
}

// isObject reports whether raw is a JSON object: MCP clients of the
// 2025-06-18 revision accept no other structured content.
func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}
