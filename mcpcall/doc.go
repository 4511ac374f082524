// Package mcpcall turns a Model Context Protocol tools/call into a
// harness.ToolCall and the harness's Result back into what an MCP client
// gets, with no MCP SDK in its imports: the adapters for
// github.com/modelcontextprotocol/go-sdk (adapters/mcp) and
// github.com/mark3labs/mcp-go (adapters/mcpgo) are thin layers over it, so
// both place a call, bind it to its caller and word its answer the same way.
//
// A Resolver places a call (see Resolver.Resolve):
//
//   - The tenant and principal come from authentication (Identity) when the
//     server has it; the client's session and turn are then scoped under
//     the principal, so they never reach another principal's records.
//   - A call that carries the client's intent key (MetaKey, sent by an
//     agent on agentonce) is keyed by it.
//   - A call with a session and turn in _meta (MetaSession, MetaTurn) is
//     keyed by them, as for any agentonce caller.
//   - A call with no scope at all, as standard hosts send, gets a window:
//     identical calls (principal, tool, canonical input) within
//     Window of the first are one intent. The model is told when an answer
//     is an earlier call's, and that RepeatArgument makes a deliberate
//     repeat a new intent.
//
// AnswerOf words a Result (text is Result.ForModel); HintsOf and EffectOf
// map effect kinds to MCP tool annotations and back.
//
// docs/mcp.md is the long form: who the caller is, how a call is placed,
// results and annotations, for both SDKs.
//
// # Caveats
//
//   - The window's first call is remembered in the process and found in the
//     journal, so a retry across a restart is one intent; two server
//     processes on one journal can still split two parallel identical calls
//     made within a moment of a window boundary.
//   - A client without Identity asserts its own tenant: only for a
//     transport whose every client is trusted (stdio).
package mcpcall
