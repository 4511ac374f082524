// Package mcpgo puts the tools of a github.com/mark3labs/mcp-go server
// behind an agentonce Harness, with the contract of adapters/mcp on the
// official go-sdk: an MCP client that repeats a tool call (a timeout, a
// reconnect, a model that asks again) gets one side effect and the truth
// about it.
//
//	opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(verify),
//		Effects: map[string]journal.Effect{"refund": journal.Keyed}}
//	err := mcpgo.Wrap(s, h, opts) // the server's own tools, as they are
//	httpSrv, err := mcpgo.HTTPServer(s, opts) // refuses to start without an identity
//
// Wrap keeps a server's tools (definitions, schemas, handlers) and sends
// every call of one through the harness, by a tool handler middleware,
// with the effect kind Options.Effects gives it. AddTools serves harness
// tools instead, their input schema from Tool.Schema or derived from the
// Go input type of a harness.Typed tool.
//
// Placing a call, its identity, the de-duplication window and the
// answer's wording are package mcpcall, shared with adapters/mcp: a
// client-named session and turn are scoped under the principal from
// Options.Identity, a call without scope in _meta is placed by the window,
// and IsError is set unless the intent succeeded. A call runs on a context
// detached from the request, bounded by Options.MaxCall, and a retry joins
// it or reads its outcome from the journal.
//
// With Options.Tasks (and server.WithTaskCapabilities) every harness tool
// is offered as an optional MCP task that stays working while the intent
// is under way. docs/mcp.md is the long form.
//
// # Caveats
//
//   - A call still running when MaxCall ends is answered InProgress.
//   - mcp-go keeps tasks in memory: a restart loses the task, not the
//     intent.
package mcpgo
