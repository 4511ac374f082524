// Package openai runs the function calls of OpenAI Chat Completions and
// Responses API answers through an agentonce Harness, so that a model that
// repeats a call, an answer that splits one intent into two parallel
// calls, or a process that restarts mid-turn causes at most one side
// effect, and the model is told what really happened.
//
// ChatTools and ResponseTools give the registered tools as function tool
// definitions; a harness.Typed tool without a Schema gets the JSON Schema
// of its Go input type, and a tool without a schema or a description is
// warned about once on Options.Logger. RunChat takes the assistant message and returns one "tool"
// message per tool call, with its tool_call_id; RunResponse takes the
// response and returns one function_call_output item per function_call
// item, with its call_id. Identical calls in one answer collapse into one
// execution.
//
// # Session and turn
//
// The session is the application's own conversation id, a required
// argument that must survive a restart (with the Responses API it may be
// the id of a stored conversation). The turn is the user's turn, not the
// model round-trip: ChatUserTurn and ResponseUserTurn count the user
// messages in the history; tool results are messages of their own role or
// items of their own type and do not count. Every round-trip of the model
// between two user messages therefore keys its calls alike, and a repeated
// call is answered from the journal; the same request in the user's next
// message is a new intent. An application that chains Responses requests
// with previous_response_id sends only new items, so it counts its user
// turns itself and calls RunResponseTurn (RunChatTurn is the same for
// Chat Completions).
//
// # What the model is told
//
// Neither API has an error flag on a tool result: the content is
// Result.ForModel, the same text on a replay. Succeeded is the tool's
// output. Failed says nothing was done; the model may correct its input.
// Suppressed, Unknown and InProgress say the action was not repeated and
// tell the model not to retry it or change its input. Rejected (unknown
// tool, arguments that are not valid JSON, no session or turn) says the
// call did not run.
//
// # Caveats
//
// Only function tools are run: custom (free-form) tool calls and built-in
// tools are left to the application, which must still answer every call
// id it was sent. Empty arguments are taken as {}. Streaming is not
// covered: accumulate the stream into a message or response first.
package openai
