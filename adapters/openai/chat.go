package openai

import (
	"context"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentonce/agentonce/harness"
)

// ChatTools returns the Harness's registered tools as Chat Completions
// function tools (ChatCompletionNewParams.Tools), sorted by name. The
// description is Tool.Description. The parameters are Tool.Schema as
// given, else the JSON Schema of Tool.InputType (harness.Typed's input
// type), derived on the first listing; a tool with neither, or whose type
// has no object schema, gets {"type":"object"}. Each tool without a
// schema or a description is warned about once, on Options.Logger. Strict
// mode is left off, since it needs every property required.
func (a *Adapter) ChatTools() []sdk.ChatCompletionToolUnionParam {
	tools := a.h.Tools()
	out := make([]sdk.ChatCompletionToolUnionParam, len(tools))
	for i, t := range tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: a.parameters(t)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		out[i] = sdk.ChatCompletionFunctionTool(fn)
	}
	return out
}

// ChatUserTurn returns the user's turn that a Chat Completions history
// ends in: the number, from 1, of its user messages. Tool results have
// their own role ("tool") and system, developer and assistant messages do
// not count. It returns "" for a history with no user message, which the
// Harness rejects (harness.ErrNoTurn).
func ChatUserTurn(history []sdk.ChatCompletionMessageParamUnion) string {
	n := 0
	for _, m := range history {
		switch {
		case m.OfUser != nil:
			n++
		case m.OfSystem != nil, m.OfDeveloper != nil, m.OfAssistant != nil, m.OfTool != nil, m.OfFunction != nil:
		default:
			// A message given as raw JSON (param.Override) has no typed
			// field: read its role from what would be sent.
			if _, role := peek(m); role == "user" {
				n++
			}
		}
	}
	return turnOf(n)
}

// RunChat runs every function tool call of msg, the assistant message the
// model answered history with, in the user turn that history ends in
// (ChatUserTurn). It returns one "tool" message per function call, in
// order, each with its tool_call_id and the result's ForModel text as
// content, and the Harness's results in the same order. Chat Completions
// has no error flag: a failure, suppression, unknown or in-progress
// outcome is told by the text alone.
//
// session is the application's id of the conversation; it is required,
// and the same conversation must keep it across restarts.
//
// When msg has no tool call the model has answered, and both are empty.
// Custom (free-form) tool calls are not the Harness's: the application
// answers them itself.
func (a *Adapter) RunChat(ctx context.Context, session string, history []sdk.ChatCompletionMessageParamUnion, msg sdk.ChatCompletionMessage) ([]sdk.ChatCompletionMessageParamUnion, []harness.Result) {
	return a.RunChatTurn(ctx, session, ChatUserTurn(history), msg)
}

// RunChatTurn is RunChat with an explicit user turn, for applications that
// number or name their user turns themselves.
func (a *Adapter) RunChatTurn(ctx context.Context, session, turn string, msg sdk.ChatCompletionMessage) ([]sdk.ChatCompletionMessageParamUnion, []harness.Result) {
	var calls []call
	for _, tc := range msg.ToolCalls {
		if tc.Type != "function" {
			continue
		}
		calls = append(calls, call{id: tc.ID, name: tc.Function.Name, arguments: tc.Function.Arguments})
	}
	results := a.run(ctx, session, turn, calls)
	if len(results) == 0 {
		return nil, nil
	}
	out := make([]sdk.ChatCompletionMessageParamUnion, len(results))
	for i, r := range results {
		out[i] = sdk.ToolMessage(r.ForModel(), calls[i].id)
	}
	return out, results
}
