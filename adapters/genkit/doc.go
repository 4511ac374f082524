// Package genkit runs the tools of a Firebase Genkit (Go) application
// through an agentonce Harness, so that a model that asks for the same
// action twice, a retry after a lost answer, a process that restarts
// mid-generation, or a tool request restarted after an interrupt causes
// at most one side effect, and the model is told what really happened.
//
// Genkit has model middleware but no tool middleware, so the adapter
// wraps the tool where it is defined: DefineTool is genkit.DefineTool with
// a harness.Tool for the name, description and harness settings (the
// effect kind above all). Import it under another name beside genkit's:
//
//	import agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
//
// # Scope
//
// Tenant is Options.Tenant, or the flow's action context's TenantKey.
// Session and Turn come from the call's context: WithSession (the
// conversation id and the generation's messages, whose user messages give
// the turn), harness.WithScope, or else the action context's SessionKey and
// TurnKey, which a context provider of a flow served over HTTP can set.
// The turn is the user's message, not the model's round trip: Generate
// calls the model and the tools many times while it answers one user
// message, and each of those round trips must key the same charge alike,
// so that a repeated call is answered from the journal; the same request
// in the user's next message is a new intent. A call without a session or
// turn is refused (harness.ErrNoTurn) and nothing runs. Genkit gives a
// tool no request ref, so ToolCall.ID is empty.
//
// # What the model reads
//
// A tool's output type is any: on success the recorded output (the JSON
// of the tool's Out), and otherwise the text harness.Result.ForModel, the
// same on a replay. A failure, a suppression, an unknown outcome or a
// refusal is an output, not an error, which would end the generation.
//
// # Interrupts and restarts
//
// ToolContext.Interrupt is recorded as the outcome of the call it
// interrupts, and raised again when that call is repeated in the turn. A
// restart (ToolDef.RestartWith, ai.WithToolRestarts) is a new intent whose
// discriminator is its resumed metadata: it runs once, and the same
// restart run again (after a crash, or a retried resume) is answered from
// the journal. A response given instead (ToolDef.RespondWith) runs
// nothing.
//
// # Caveats
//
// The journal shows a recorded interrupt as a success whose output is
// {"agentonce.interrupt": metadata}. Multipart tools are not covered.
// genkit v1.4's prompt library needs invopop/jsonschema v0.13, which
// anthropic-sdk-go v2 does not build with: the two cannot share a module.
package genkit
