// Package eino runs the tool calls of a CloudWeGo eino agent or graph
// through an agentonce Harness, so that a model that asks for the same
// action twice, a retry after a lost answer, a process that restarts
// mid-run, or a run resumed from a checkpoint causes at most one side
// effect, and the model is told what really happened.
//
// Adapter.Middleware is a compose.ToolMiddleware: put it in the
// ToolsNodeConfig.ToolCallMiddlewares of a react agent, an adk
// ChatModelAgent or a graph's ToolsNode, and every tool call (invokable,
// streamable, enhanced) becomes a harness.Harness.Call. The tools stay eino tools
// (utils.InferTool and the like); the adapter registers each in the
// Harness on its first call, with the settings Options.Tools gives its
// name (the effect kind above all; Unkeyed by default).
//
// # Scope
//
// Tenant is Options.Tenant; ID is the model's tool call id. Session and
// Turn come from the run's context: WithSession (the conversation id and
// the input messages, whose user messages give the turn), WithScope, or
// else the adk session values SessionKey and TurnKey. The turn is the
// user's message, not the model's round trip: eino's loop calls the model
// and the tools node many times while it answers one user message, and
// each of those round trips must key the same charge alike, so that a
// repeated call is answered from the journal; the same request in the
// user's next message is a new intent. A call without a session or turn is
// refused (harness.ErrNoTurn) and nothing runs. A resumed run
// (compose.WithCheckPointID, Runner.Resume) must be given the scope of the
// run it resumes.
//
// # What the model reads
//
// The tool message is Text(result): on success the tool's result as the
// tool returned it, and otherwise harness.Result.ForModel, the same on a
// replay. A failure, a suppression, an unknown outcome or a refusal is a
// tool message, not an error: the run goes on and the model is told. The
// harness decides retries; the tool's error is classified by retryclass
// (an HTTP answer read with downstream.ReadJSON keeps its status).
//
// # Interrupts and resumes
//
// A tool's interrupt (tool.Interrupt, tool.StatefulInterrupt) is recorded
// as the outcome of the call it interrupted and reaches eino as it was
// raised; the same call repeated in the turn interrupts again, with the
// recorded info. A call that eino resumes as the target of a resume
// (compose.ResumeWithData, Runner.ResumeWithParams) is a new intent whose
// discriminator is the resume data: it runs once, and the same resume run
// again (after a crash, from the same checkpoint) is answered from the
// journal. An interrupt before the tools node
// (compose.WithInterruptBeforeNodes) records nothing: the resumed tools
// node's calls are the calls.
//
// # Caveats
//
// eino does not expose an interrupt's state: a recorded interrupt raised
// again carries its info but not its state. A second interrupt of a call
// resumed with the same data is answered from the journal (the first).
// A stream is recorded whole (MaxStreamBytes), so the model
// reads it in one chunk. Calls that eino's UnknownToolsHandler answers do
// not pass the middleware. A tool the Harness already has under the same
// name runs as registered there. Text shows a JSON string result as the
// string itself.
package eino
