// Package mcp puts the tools of a github.com/modelcontextprotocol/go-sdk
// server behind an agentonce Harness, so that a repeated tool call (a
// timeout, a reconnect, a model that asks again) has one side effect and
// the model reads the truth about it; and it wraps a remote MCP server's
// tools as harness tools for an agent (ClientTools).
//
//	opts := &agentmcp.Options{Identity: agentmcp.TokenIdentity("org"),
//		Effects: map[string]journal.Effect{"refund": journal.Keyed}}
//	err := agentmcp.Wrap(server, h, opts) // the server's own tools, as they are
//	handler, err := agentmcp.HTTPHandler(server, opts, nil)
//
// Wrap keeps a server's tools (definitions, schemas, handlers) and sends
// every call of one through the harness, with the effect kind
// Options.Effects gives it. AddTools serves harness tools instead, their
// input schema from Tool.Schema or derived from the Go input type of a
// harness.Typed tool.
//
// Options.Identity gives each call's tenant and principal from
// authentication, never from the transport session, which changes on
// reconnect. A call is then placed by the calling agent's key (MetaKey), by
// the session and turn in its _meta (SetScope), or, for a standard host
// that sends neither, by a de-duplication window: identical calls of one
// principal within Options.Window are one intent. Without Identity the
// client is trusted: on stdio, and over HTTP only with TrustClientScope
// (otherwise ErrNoIdentity).
//
// A call runs detached from the client's cancellation, bounded by
// Options.MaxCall, so a retry joins it or reads its outcome. The
// SDK-independent logic is package mcpcall, shared with adapters/mcpgo;
// the long form is docs/mcp.md.
//
// # Caveats
//
//   - go-sdk v1.8.0 does not implement the MCP tasks utility; a call still
//     running at MaxCall is answered InProgress.
//   - ClientTools believes a server's annotations only with
//     ClientOptions.TrustAnnotations.
//   - MCP has no tool-call id of the model's; results carry none.
package mcp
