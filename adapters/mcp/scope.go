package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce/mcpcall"
)

// The _meta keys of a tools/call request that place the call; see package
// mcpcall, where they are defined once for both Go MCP SDKs.
const (
	MetaTenant        = mcpcall.MetaTenant
	MetaSession       = mcpcall.MetaSession
	MetaTurn          = mcpcall.MetaTurn
	MetaDiscriminator = mcpcall.MetaDiscriminator
	// MetaKey is, in a request, the calling agent's intent key (ClientTools
	// sends it) and, in a result, the server's key for the call.
	MetaKey = mcpcall.MetaKey
)

// The _meta keys of a CallToolResult that say how the harness answered.
const (
	MetaStatus = mcpcall.MetaStatus
	MetaSource = mcpcall.MetaSource
	MetaWindow = mcpcall.MetaWindow
)

// MetaDedupes marks, in a tool definition's _meta, a tool served by
// agentonce, which keys a call by the MetaKey it is sent.
const MetaDedupes = mcpcall.MetaDedupes

// RepeatArgument is the optional input property every served tool offers
// the model for a deliberate repeat.
const RepeatArgument = mcpcall.RepeatArgument

// Identity is the caller as authentication established it.
type Identity = mcpcall.Identity

// ScopeError is a tools/call request whose _meta does not place the call.
// The tool did not run.
type ScopeError = mcpcall.ScopeError

// Scope places a tool call: the tenant, the application's conversation
// (Session) and the user's turn in it, and an optional Discriminator.
type Scope struct {
	Tenant        string
	Session       string
	Turn          string
	Discriminator string
}

// SetScope writes s into the _meta of p, the client side of reading it on
// the server. Empty fields are left out; other _meta entries are kept.
func SetScope(p *sdk.CallToolParams, s Scope) {
	m := p.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	for k, v := range map[string]string{
		MetaTenant: s.Tenant, MetaSession: s.Session, MetaTurn: s.Turn, MetaDiscriminator: s.Discriminator,
	} {
		if v != "" {
			m[k] = v
		}
	}
	p.SetMeta(m)
}
