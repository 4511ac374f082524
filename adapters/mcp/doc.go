// Package mcp serves the tools of an agentonce Harness as Model Context
// Protocol tools, on a github.com/modelcontextprotocol/go-sdk server, so
// that an MCP client that repeats a tool call (a timeout, a reconnect, a
// model that asks again) gets one side effect and the truth about it.
//
// Import it under another name beside the SDK's package of the same name:
//
//	import agentmcp "github.com/agentonce/agentonce/adapters/mcp"
//
//	s := mcp.NewServer(&mcp.Implementation{Name: "payments"}, nil)
//	err := agentmcp.AddTools(s, h, nil) // every tool of h: name, description, schema
//
// # Scope
//
// A key needs the call's tenant, conversation and user turn, and a
// tools/call request carries none of them. The client sends them in the
// request's _meta under MetaTenant, MetaSession and MetaTurn
// ("io.github.agentonce/tenant", "…/session", "…/turn"; reverse DNS
// prefixes, as the MCP specification asks), with SetScope on the client
// side. Session is the application's conversation id. Turn is the user's
// turn (the index or id of the user message that started the work), not
// the model round-trip: every tool call the model makes while answering
// one user message carries the same Turn. MetaDiscriminator, optional,
// makes a deliberate second identical call in one turn a new intent.
//
// A call without them is answered with a tool error (IsError) that names
// the missing _meta keys, and nothing runs. The MCP transport session id is
// never used instead: a client that reconnects gets a new one for the same
// conversation, and a retry would then charge again. A tool registered with
// harness.Tool.NoTurn needs only the tenant. Options.Tenant takes the
// tenant from the request's authentication instead of _meta.
//
// # Cancellation
//
// The client's cancellation does not reach the call. A client that times
// out sends notifications/cancelled (or drops the HTTP request); were the
// tool's context cancelled then, an effect could be cut half-way and its
// outcome become unknown. The handler runs harness.Harness.Call on a
// context that keeps the request's values but not its cancellation, bounded
// by Options.MaxCall (five minutes by default) from the call's start, and
// returns as soon as the request ends. The call goes on, its outcome is
// recorded, and the client's retry joins it (Collapsed) or reads it from
// the journal (Replayed).
//
// # Results
//
// The text content is always harness.Result.ForModel, the same on replay.
//
//   - Succeeded: IsError false; the text is the output, and the output is
//     also the structured content when it is a JSON object.
//   - Failed: IsError true; nothing was done, and the model may correct
//     its input.
//   - Suppressed, Unknown, InProgress: IsError true; the text tells the
//     model not to retry and not to change the input.
//   - Rejected: IsError true; the call was refused and nothing started.
//
// The result's _meta carries MetaStatus, MetaSource and MetaKey for the
// client program.
//
// # Caveats
//
//   - A tenant read from _meta is what the client says. On a server that
//     serves several tenants, set Options.Tenant from the authenticated
//     request.
//   - MCP has no tool-call id of the model's; results carry none.
//   - A call outlives a client that gave up by up to Options.MaxCall, and
//     harness.Harness.Close waits for it.
package mcp
