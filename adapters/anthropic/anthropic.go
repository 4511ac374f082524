package anthropic

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentonce/agentonce/harness"
)

// Options configures an Adapter. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant is the account the calls act for; it is part of every key.
	// Zero means the empty tenant (one account per journal).
	Tenant string
	// Logger receives the warnings about the tools Tools offers: a tool
	// the model is given no input schema or no description for. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Adapter runs the tool_use blocks of Messages API responses through a
// Harness. It is safe for concurrent use.
type Adapter struct {
	h      *harness.Harness
	tenant string
	log    *slog.Logger

	mu      sync.Mutex                 // guards schemas
	schemas map[string]json.RawMessage // input schema offered, by tool name
}

// New returns an Adapter on h.
func New(h *harness.Harness, opts *Options) *Adapter {
	a := &Adapter{h: h}
	if opts != nil {
		a.tenant, a.log = opts.Tenant, opts.Logger
	}
	return a
}

// Tools returns the Harness's registered tools as Messages API tool
// definitions (MessageNewParams.Tools), sorted by name so that the request
// prefix, and so the prompt cache, is stable. The description is
// Tool.Description. The input schema is Tool.Schema as given, else the
// JSON Schema of Tool.InputType (harness.Typed's input type), derived on
// the first listing; a tool with neither, or whose type has no object
// schema, gets {"type":"object"}. Each tool without a schema or a
// description is warned about once, on Options.Logger.
func (a *Adapter) Tools() []sdk.ToolUnionParam {
	tools := a.h.Tools()
	out := make([]sdk.ToolUnionParam, len(tools))
	for i, t := range tools {
		tp := sdk.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](a.offered(t)),
		}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		out[i] = sdk.ToolUnionParam{OfTool: &tp}
	}
	return out
}

// UserTurn returns the user's turn that history ends in: the number, from
// 1, of the real user messages in it. A user message that carries only
// tool_result blocks is the application answering the model, not the user
// speaking, so it does not count, nor does an empty one; any other user
// message does (one that mixes tool results with text or images counts as
// the user speaking).
// Assistant and system messages do not count. It returns "" for a history
// with no user message, which the Harness rejects (harness.ErrNoTurn).
//
// history is the messages sent with the request whose response is being
// run; whether it also holds that response makes no difference.
func UserTurn(history []sdk.MessageParam) string {
	n := 0
	for _, m := range history {
		switch {
		case m.OfUser != nil:
			if speaks(m.OfUser.Content) {
				n++
			}
		case m.OfAssistant != nil, m.OfSystem != nil:
		default:
			// A message given as raw JSON (param.Override) has no typed
			// field: read it as it would be sent.
			if rawUserTurn(m) {
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// speaks reports whether a user message's blocks hold anything but tool
// results: an empty message is not the user speaking either (Run's answer
// to a response without tool_use blocks is one).
func speaks(blocks []sdk.ContentBlockParamUnion) bool {
	for _, b := range blocks {
		if b.OfToolResult == nil {
			return true
		}
	}
	return false
}

// rawUserTurn reports whether m, as it would be sent, is a user message
// that is not only tool results.
func rawUserTurn(m sdk.MessageParam) bool {
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(b, &msg) != nil || msg.Role != "user" {
		return false
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(msg.Content, &blocks) != nil {
		return true // a string: the user spoke
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			return true
		}
	}
	return false
}

// Run runs every tool_use block of msg, the model's response to history,
// in the user turn that history ends in (UserTurn), and returns the user
// message that answers them: one tool_result block per tool_use block, in
// the response's order, each with its tool_use id, the result's ForModel
// text as content, and is_error unless the call succeeded. It also returns
// the Harness's results, in the same order, for the application's own use
// (a Result's Source says whether the tool ran, was replayed or collapsed).
//
// session is the application's id of the conversation; it is required
// (the Messages API has none), and the same conversation must keep it
// across restarts, or a retried turn would run its tools again.
//
// When msg has no tool_use block, the model has answered: the results are
// empty and the message has no content (do not send it).
func (a *Adapter) Run(ctx context.Context, session string, history []sdk.MessageParam, msg *sdk.Message) (sdk.MessageParam, []harness.Result) {
	return a.RunTurn(ctx, session, UserTurn(history), msg)
}

// RunTurn is Run with an explicit user turn, for applications that number
// or name their user turns themselves (turn must then be the same for every
// model round-trip between two user messages, and differ across them).
func (a *Adapter) RunTurn(ctx context.Context, session, turn string, msg *sdk.Message) (sdk.MessageParam, []harness.Result) {
	var calls []harness.ToolCall
	var uses []sdk.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue // text, thinking, and server tools the API ran itself
		}
		u := b.AsToolUse()
		uses = append(uses, u)
		calls = append(calls, harness.ToolCall{
			ID:      u.ID,
			Tenant:  a.tenant,
			Session: session,
			Turn:    turn,
			Tool:    u.Name,
			Input:   u.Input,
		})
	}
	if len(calls) == 0 {
		return sdk.NewUserMessage(), nil
	}
	results := a.h.CallAll(ctx, calls)
	blocks := make([]sdk.ContentBlockParamUnion, len(results))
	for i, r := range results {
		blocks[i] = toolResult(uses[i], r)
	}
	return sdk.NewUserMessage(blocks...), results
}

// toolResult is the tool_result block that answers u with r. Everything
// but a success is an error for the model: a failure it may correct, and a
// suppressed, unknown or in-progress action whose text tells it not to
// retry or change the input.
func toolResult(u sdk.ToolUseBlock, r harness.Result) sdk.ContentBlockParamUnion {
	b := sdk.NewToolResultBlock(u.ID, r.ForModel(), !r.OK())
	if u.ToolsetName != "" {
		b.OfToolResult.ToolsetName = param.NewOpt(u.ToolsetName)
	}
	return b
}
