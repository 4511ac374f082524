// Package mcp serves the tools of an agentonce Harness as Model Context
// Protocol tools on a github.com/modelcontextprotocol/go-sdk server, and
// wraps a remote MCP server's tools as harness tools (ClientTools), so that
// a repeated tool call (a timeout, a reconnect, a model that asks again)
// has one side effect and the model reads the truth about it. The long
// form, with the decisions for a multi-tenant server that moves money, is
// docs/mcp.md.
//
//	import agentmcp "github.com/agentonce/agentonce/adapters/mcp"
//
//	opts := &agentmcp.Options{Identity: agentmcp.TokenIdentity("org")}
//	err := agentmcp.AddTools(server, h, opts)
//	handler, err := agentmcp.HTTPHandler(server, opts, nil) // refuses without an identity
//	http.Handle("/mcp", auth.RequireBearerToken(verify, nil)(handler))
//
// # Identity and scope
//
// Options.Identity gives each call's tenant and principal from
// authentication (TokenIdentity: the bearer token's subject and a tenant
// claim), never from the transport session, which changes on reconnect. A
// call is then placed, in order, by the calling agent's key (MetaKey, which
// ClientTools sends), by the session and turn in its _meta (MetaSession,
// MetaTurn, written by SetScope), or, for a standard host that sends
// neither, by a de-duplication window: identical calls of one principal
// (same tool, same canonical input) within Options.Window of the first are
// one intent. Session, key and window are scoped under the principal, so a
// client-named session never reaches another user's records. The model is
// told when an answer is an earlier call's and that RepeatArgument, which
// every tool offers, makes a deliberate repeat a new intent.
//
// Without Identity the client's _meta tenant is believed: on stdio, whose
// one client started the server; over HTTP only with
// Options.TrustClientScope, otherwise every call is refused (ErrNoIdentity).
//
// # Calls, results, annotations
//
// A call runs detached from the client's cancellation, bounded by
// Options.MaxCall, so a retry joins it or reads its outcome. The text
// content is harness.Result.ForModel; IsError is set unless the intent
// succeeded; the result's _meta carries MetaStatus, MetaSource and MetaKey.
// Tools carry readOnlyHint, idempotentHint and destructiveHint from their
// effect kind (mcpcall.HintsOf). The SDK-independent logic is package
// mcpcall, shared with adapters/mcpgo.
//
// # Caveats
//
//   - go-sdk v1.8.0 does not implement the MCP tasks utility; a call still
//     running at MaxCall is answered InProgress, a tool error telling the
//     model to call again with the same input for the outcome.
//   - ClientTools believes a server's annotations only with
//     ClientOptions.TrustAnnotations; otherwise a tool not configured in
//     ClientOptions.Effects is Unkeyed.
//   - MCP has no tool-call id of the model's; results carry none.
package mcp
