// Package genkit runs the tools of a Firebase Genkit (Go) application
// through an agentonce Harness, so that a model that asks for the same
// action twice, a retry after a lost answer, a process that restarts
// mid-generation, or a tool request restarted after an interrupt causes
// at most one side effect, and the model is told what really happened.
//
// Genkit has no tool middleware, so the adapter wraps the tool where it is
// defined: DefineTool is genkit.DefineTool with a harness.Tool for the
// name, description and harness settings. Import it under another name:
//
//	import agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
//
// Scope: Tenant is Options.Tenant or the action context's TenantKey;
// Session and Turn come from WithSession, harness.WithScope, or the action
// context's SessionKey and TurnKey. The turn is the user's message, not
// the model's round trip, so a call repeated while Generate answers one
// message is answered from the journal. A call without a session or turn
// is refused (harness.ErrNoTurn) and nothing runs. ToolCall.ID is empty:
// Genkit gives a tool no request ref.
//
// The model reads the recorded output on success, else the text
// harness.Result.ForModel, the same on a replay; a failure is an output,
// not an error, which would end the generation. ToolContext.Interrupt is
// recorded as its call's outcome and raised again when the call is
// repeated in the turn; a restart is a new intent keyed by its resumed
// metadata, run once; RespondWith runs nothing.
//
// docs/adapters.md ("adapters/genkit") is the long form.
//
// # Caveats
//
// The journal shows a recorded interrupt as a success whose output is
// {"agentonce.interrupt": metadata}. Multipart tools are not covered.
// genkit v1.4's prompt library needs invopop/jsonschema v0.13, which
// anthropic-sdk-go v2 does not build with: the two cannot share a module.
package genkit
