// Package mcpcall turns a Model Context Protocol tools/call into a
// harness.ToolCall and the harness's Result back into what an MCP client
// gets, with no MCP SDK in its imports: adapters/mcp (go-sdk) and
// adapters/mcpgo (mark3labs/mcp-go) are thin layers over it, so both place
// a call, bind it to its caller and word its answer the same way.
//
// A Resolver places a call (Resolver.Resolve, which lists the rules): by
// the client's intent key, else by the session and turn in _meta, else,
// as standard hosts send no scope, by a window: identical calls within
// Window of the first are one intent, and RepeatArgument makes a
// deliberate repeat a new one.
//
// AnswerOf words a Result (Note, the words telling the model an answer is
// an earlier call's); HintsOf and EffectOf map effect kinds to MCP tool
// annotations and back. docs/mcp.md is the long form.
//
// # Caveats
//
//   - Two server processes on one journal can split two parallel identical
//     calls made within a moment of a window boundary.
//   - A client without Identity asserts its own tenant: only for a
//     transport whose every client is trusted (stdio).
package mcpcall
