// Package eino runs the tool calls of a CloudWeGo eino agent or graph
// through an agentonce Harness, so that a model that asks for the same
// action twice, a retry after a lost answer, a process that restarts
// mid-run, or a run resumed from a checkpoint causes at most one side
// effect, and the model is told what really happened.
//
// Adapter.Middleware is a compose.ToolMiddleware: put it in the
// ToolsNodeConfig.ToolCallMiddlewares of a react agent, an adk
// ChatModelAgent or a graph's ToolsNode, and every tool call becomes a
// harness.Harness.Call. The tools stay eino tools; each is registered in
// the Harness on its first call with the settings Options.Tools gives its
// name (Unkeyed by default; a name that looks like a misspelling of an
// unused one there is logged, with the suggestion).
//
// Scope: Tenant is Options.Tenant, ID the model's tool call id; Session and
// Turn come from WithSession, harness.WithScope, or the adk session values
// SessionKey and TurnKey. The turn is the user's message, not the model's
// round trip, so a call repeated while the agent answers one message is
// answered from the journal. A call without a session or turn is refused
// (harness.ErrNoTurn, a warning on the Harness's Logger, by default
// slog.Default()) and nothing runs; a resumed run must be given the scope
// of the run it resumes.
//
// The model reads Text(result): the tool's result on success, else
// harness.Result.ForModel, the same on a replay. A failure, suppression,
// unknown outcome or refusal is a tool message, not an error.
//
// A tool's interrupt is recorded as its call's outcome and raised again
// when the call is repeated in the turn. A call eino resumes is a new
// intent keyed by the resume data: it runs once, and the same resume run
// again is answered from the journal.
//
// docs/adapters.md ("adapters/eino") is the long form.
//
// # Caveats
//
//   - A recorded interrupt raised again carries its info, not its state;
//     a second interrupt of a call resumed with the same data is answered
//     with the first.
//   - A stream is recorded whole (MaxStreamBytes) and read in one chunk.
//   - Calls eino's UnknownToolsHandler answers do not pass the middleware;
//     a tool the Harness already has under the name runs as registered.
//   - Text shows a JSON string result as the string itself.
package eino
