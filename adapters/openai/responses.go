package openai

import (
	"context"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentonce/agentonce/harness"
)

// ResponseTools returns the Harness's registered tools as Responses API
// function tools (ResponseNewParams.Tools), sorted by name, with the same
// descriptions and parameters as ChatTools (and its warnings, given once
// for both), and strict mode off.
func (a *Adapter) ResponseTools() []responses.ToolUnionParam {
	tools := a.h.Tools()
	out := make([]responses.ToolUnionParam, len(tools))
	for i, t := range tools {
		u := responses.ToolParamOfFunction(t.Name, a.parameters(t), false)
		if t.Description != "" {
			u.OfFunction.Description = param.NewOpt(t.Description)
		}
		out[i] = u
	}
	return out
}

// ResponseUserTurn returns the user's turn that a Responses API input ends
// in: the number, from 1, of its user-role message items. Function call
// outputs are items of their own and do not count, nor do the model's
// items. It returns "" for an input with no user message, which the
// Harness rejects (harness.ErrNoTurn).
//
// It needs the whole conversation. An application that chains requests
// with previous_response_id (or a stored conversation) sends only the new
// items, and must count its user turns itself and call RunResponseTurn.
func ResponseUserTurn(input responses.ResponseInputParam) string {
	n := 0
	for _, it := range input {
		switch {
		case it.OfMessage != nil:
			if it.OfMessage.Role == responses.EasyInputMessageRoleUser {
				n++
			}
		case it.OfInputMessage != nil:
			if it.OfInputMessage.Role == "user" {
				n++
			}
		case it.OfFunctionCall != nil, it.OfFunctionCallOutput != nil, it.OfOutputMessage != nil, it.OfReasoning != nil:
		default:
			// An item given as raw JSON (param.Override) has no typed
			// field: read its role from what would be sent.
			if typ, role := peek(it); role == "user" && (typ == "" || typ == "message") {
				n++
			}
		}
	}
	return turnOf(n)
}

// RunResponse runs every function_call item of resp, the model's response
// to input, in the user turn that input ends in (ResponseUserTurn). It
// returns one function_call_output item per function call, in order, each
// with its call_id and the result's ForModel text as output, and the
// Harness's results in the same order. The Responses API has no error
// flag: a failure, suppression, unknown or in-progress outcome is told by
// the text alone.
//
// session is the application's id of the conversation (it may be the id
// of a stored conversation); it is required, and the same conversation
// must keep it across restarts.
//
// When resp has no function call the model has answered, and both are
// empty. Other tool calls (built-in tools, custom tools) are not the
// Harness's.
func (a *Adapter) RunResponse(ctx context.Context, session string, input responses.ResponseInputParam, resp *responses.Response) (responses.ResponseInputParam, []harness.Result) {
	return a.RunResponseTurn(ctx, session, ResponseUserTurn(input), resp)
}

// RunResponseTurn is RunResponse with an explicit user turn: for
// applications that chain requests with previous_response_id, or number
// their user turns themselves.
func (a *Adapter) RunResponseTurn(ctx context.Context, session, turn string, resp *responses.Response) (responses.ResponseInputParam, []harness.Result) {
	var calls []call
	for _, it := range resp.Output {
		if it.Type != "function_call" {
			continue
		}
		fc := it.AsFunctionCall()
		calls = append(calls, call{id: fc.CallID, name: fc.Name, arguments: fc.Arguments})
	}
	results := a.run(ctx, session, turn, calls)
	if len(results) == 0 {
		return nil, nil
	}
	out := make(responses.ResponseInputParam, len(results))
	for i, r := range results {
		item := responses.ResponseInputItemParamOfFunctionCallOutput(r.ForModel())
		item.OfFunctionCallOutput.CallID = param.NewOpt(calls[i].id)
		out[i] = item
	}
	return out, results
}
