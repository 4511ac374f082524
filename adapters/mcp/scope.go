package mcp

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The _meta keys of a tools/call request that place the call. The prefix is
// reverse DNS notation, as the MCP specification asks of _meta keys since
// its 2025-11-25 revision (io.modelcontextprotocol/ and the like are
// reserved for the protocol itself).
const (
	// MetaTenant is the customer account the call acts for.
	MetaTenant = "io.github.agentonce/tenant"
	// MetaSession is the application's conversation id. It is not the MCP
	// transport session id: a client that reconnects gets a new one of
	// those for the same conversation.
	MetaSession = "io.github.agentonce/session"
	// MetaTurn is the user's turn: the index or id of the user message that
	// started the work, the same for every model round-trip it causes.
	MetaTurn = "io.github.agentonce/turn"
	// MetaDiscriminator, optional, makes a second deliberate identical call
	// in one turn a distinct intent (harness.ToolCall.Discriminator).
	MetaDiscriminator = "io.github.agentonce/discriminator"
)

// The _meta keys of a CallToolResult that say how the harness answered.
// They are for the client program, not the model, which reads the text.
const (
	// MetaStatus is the Result's Status ("succeeded", "unknown", …).
	MetaStatus = "io.github.agentonce/status"
	// MetaSource is the Result's Source ("executed", "replayed", …).
	MetaSource = "io.github.agentonce/source"
	// MetaKey is the idempotency key, when one was derived.
	MetaKey = "io.github.agentonce/key"
)

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

// ScopeError is a tools/call request whose _meta does not place the call:
// keys are missing or are not strings. The tool did not run.
type ScopeError struct {
	Tool string
	// Missing names the absent _meta keys, Invalid those of the wrong type.
	Missing []string
	Invalid []string
}

// Error names the tool and the keys, so the client's author knows what to
// send.
func (e *ScopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentonce: tool %s: the call's scope is not given, so the tool did not run", e.Tool)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; missing _meta keys: %s", strings.Join(e.Missing, ", "))
	}
	if len(e.Invalid) > 0 {
		fmt.Fprintf(&b, "; _meta keys that are not strings: %s", strings.Join(e.Invalid, ", "))
	}
	b.WriteString(" (the transport session id is never used in their place: it changes on every reconnect)")
	return b.String()
}

// scopeOf reads the scope from a request's _meta. needTurn is false for a
// tool whose intent is the same in every turn (harness.Tool.NoTurn);
// needTenant is false when Options.Tenant supplies the tenant.
func scopeOf(tool string, meta map[string]any, needTenant, needTurn bool) (Scope, error) {
	var s Scope
	e := &ScopeError{Tool: tool}
	read := func(key string, dst *string, required bool) {
		v, ok := meta[key]
		if !ok || v == nil {
			if required {
				e.Missing = append(e.Missing, key)
			}
			return
		}
		str, ok := metaString(v)
		if !ok {
			e.Invalid = append(e.Invalid, key)
			return
		}
		if str == "" && required {
			e.Missing = append(e.Missing, key)
		}
		*dst = str
	}
	if needTenant {
		read(MetaTenant, &s.Tenant, true)
	}
	read(MetaSession, &s.Session, needTurn)
	read(MetaTurn, &s.Turn, needTurn)
	read(MetaDiscriminator, &s.Discriminator, false)
	if len(e.Missing) > 0 || len(e.Invalid) > 0 {
		return Scope{}, e
	}
	return s, nil
}

// metaString accepts a string, or an integer that arrived as a JSON number
// (a turn index sent as 3 rather than "3").
func metaString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return "", false
}
