package mcpcall

import (
	"encoding/json"
	"math"
	"strconv"
)

// The _meta keys of a tools/call request that place the call, prefixed in
// reverse DNS notation as the MCP specification asks.
const (
	// MetaTenant is the customer account the call acts for. A server with
	// an Identity ignores it.
	MetaTenant = "io.github.agentonce/tenant"
	// MetaSession is the application's conversation id, not the MCP
	// transport session id (which a reconnect changes).
	MetaSession = "io.github.agentonce/session"
	// MetaTurn is the user's turn: the index or id of the user message that
	// started the work, the same for every model round-trip it causes.
	MetaTurn = "io.github.agentonce/turn"
	// MetaDiscriminator, optional, makes a second deliberate identical call
	// in one turn a distinct intent (harness.ToolCall.Discriminator).
	MetaDiscriminator = "io.github.agentonce/discriminator"
	// MetaKey, in a request, is the calling agent's idempotency key for
	// the intent (its downstream.KeyFromContext): the server keys the call by
	// it, under the caller's tenant and principal. In a result it is the
	// server's key for the call.
	MetaKey = "io.github.agentonce/key"
)

// The _meta keys of a CallToolResult that say how the harness answered.
// They are for the client program, not the model, which reads the text.
const (
	// MetaStatus is the Result's Status ("succeeded", "unknown", …).
	MetaStatus = "io.github.agentonce/status"
	// MetaSource is the Result's Source ("executed", "replayed", …).
	MetaSource = "io.github.agentonce/source"
	// MetaWindow names the de-duplication window a call without scope was
	// placed in.
	MetaWindow = "io.github.agentonce/window"
)

// MetaDedupes, in a tool definition's _meta, says the server runs
// agentonce and keys a call by the MetaKey its request carries. A client
// believes it only of a server it trusts (EffectOf).
const MetaDedupes = "io.github.agentonce/dedupes"

// RepeatArgument is the optional input property every served tool offers
// the model: a new value makes an otherwise identical call a new intent.
// It is taken out of the input before the tool sees it.
const RepeatArgument = "agentonce_repeat"

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
	case json.Number:
		if _, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
			return v.String(), true
		}
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

// bound scopes a client-given name under the (quoted) principal, so that
// no name a client sends reads as another principal's; without one, as is.
func bound(principal, name string) string {
	if principal == "" {
		return name
	}
	return strconv.Quote(principal) + "/" + name
}
