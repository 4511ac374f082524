// Package mcpgo serves the tools of an agentonce Harness as Model Context
// Protocol tools on a github.com/mark3labs/mcp-go server, with the same
// contract as adapters/mcp on the official go-sdk: an MCP client that
// repeats a tool call (a timeout, a reconnect, a model that asks again)
// gets one side effect and the truth about it.
//
//	s := server.NewMCPServer("payments", "v1")
//	opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(verify)}
//	err := mcpgo.AddTools(s, h, opts)
//	httpSrv, err := mcpgo.HTTPServer(s, opts) // refuses to start without an identity
//
// Everything that does not depend on the SDK — placing a call (identity,
// _meta scope, the de-duplication window for hosts that send no scope),
// wording the answer, the annotations — is package
// github.com/agentonce/agentonce/mcpcall, which adapters/mcp uses too; this
// package reads the request and writes the result in mcp-go's types. The
// shared logic is a package of the core module rather than a module of its
// own: it needs only the harness, so an adapter's go.mod gains no
// requirement, and one release of the core carries the one rule.
//
// # Scope, identity, results
//
// As in adapters/mcp (see its documentation and docs/mcp.md): Options.Identity
// gives each call's tenant and principal from authentication, and a
// client-named session and turn are scoped under the principal; a call
// without scope in _meta is placed by the window (mcpcall.Options.Window);
// the text content is harness.Result.ForModel; IsError is set unless the
// intent succeeded.
//
// # Tasks
//
// mcp-go v1.2 implements the MCP tasks utility (revision 2025-11-25). With
// Options.Tasks, and a server made with server.WithTaskCapabilities, every
// tool is offered with taskSupport "optional": a host that calls it as a
// task gets the task at once and polls tasks/get while the call runs, and
// the task stays working while the harness answers that the intent is
// under way (InProgress, or held by another process: mcpcall.UnderWay),
// re-asking until there is an outcome or MaxCall has passed; tasks/result
// then gives the same answer a plain call would. mcp-go keeps tasks in
// memory: a restart loses the task, not the intent, and the same call again
// reads its outcome from the journal.
//
// # Cancellation
//
// The client's cancellation does not reach the call: it runs on a context
// detached from the request, bounded by Options.MaxCall, and a retry joins
// it or reads its outcome from the journal.
//
// # Caveats
//
//   - A call still running when MaxCall ends is answered InProgress, a
//     tool error telling the model to call again with the same input for
//     the outcome.
//   - A call outlives a client that gave up by up to Options.MaxCall, and
//     harness.Harness.Close waits for it.
package mcpgo
