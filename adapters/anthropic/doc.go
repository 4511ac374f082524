// Package anthropic runs the tool calls of Anthropic Messages API responses
// through an agentonce Harness, so that a model that repeats a tool call, a
// response that splits one intent into two parallel tool_use blocks, or a
// process that restarts mid-turn causes at most one side effect, and the
// model is told what really happened.
//
// Adapter.Tools gives the registered tools as the request's tool
// definitions; a harness.Typed tool without a Schema gets the JSON Schema
// of its Go input type, and a tool without a schema or a description is
// warned about once on Options.Logger. Adapter.Run takes the model's response and the conversation
// it answers, runs every tool_use block (identical ones collapse into one
// execution) and returns the user message to send back: one tool_result
// block per tool_use block, in order, with its tool_use id.
//
// # Session and turn
//
// The Messages API keeps no conversation: the application passes the whole
// history on every request. So the session is the application's own
// conversation id, a required argument that must survive a restart. The
// turn is the user's turn, not the model round-trip: UserTurn counts the
// real user messages in the history, and a user message that only carries
// tool_result blocks is the application answering the model, not a turn.
// Every round-trip of the model between two user messages therefore keys
// its calls alike, and a repeated call is answered from the journal; the
// same request in the user's next message is a new intent. RunTurn takes
// an explicit turn instead.
//
// # What the model is told
//
// The tool_result's content is Result.ForModel, the same text on a replay.
// is_error is false only for harness.Succeeded (content: the tool's
// output). Failed is an error saying nothing was done; the model may
// correct its input. Suppressed, Unknown and InProgress are errors whose
// text tells the model not to retry the action or change its input.
// Rejected (unknown tool, invalid input, no session or turn) is an error
// saying the call did not run.
//
// # Caveats
//
// A user message that mixes tool_result blocks with the application's own
// text counts as a user turn; an application that adds text to its tool
// results should number turns itself and call RunTurn. Server tools
// (server_tool_use blocks) run at Anthropic and are left alone. Streaming
// is not covered: accumulate the stream into a Message first.
package anthropic
