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
// Everything that does not depend on the SDK (placing a call, its scope
// and identity, the de-duplication window, the answer's wording, the
// annotations) is package mcpcall, shared with adapters/mcp; this package
// reads the request and writes the result in mcp-go's types. As there:
// Options.Identity gives each call's tenant and principal, a client-named
// session and turn are scoped under the principal, a call without scope in
// _meta is placed by the window, the text is harness.Result.ForModel, and
// IsError is set unless the intent succeeded.
//
// With Options.Tasks (and server.WithTaskCapabilities) every tool is
// offered as an optional MCP task: the task stays working while the
// intent is under way, and tasks/result gives the answer a plain call
// would. mcp-go keeps tasks in memory: a restart loses the task, not the
// intent.
//
// The client's cancellation does not reach the call: it runs on a context
// detached from the request, bounded by Options.MaxCall, and a retry joins
// it or reads its outcome from the journal.
//
// docs/mcp.md is the long form.
//
// # Caveats
//
//   - A call still running when MaxCall ends is answered InProgress, a
//     tool error telling the model to call again with the same input.
//   - A call outlives a client that gave up by up to MaxCall, and
//     harness.Harness.Close waits for it.
package mcpgo
