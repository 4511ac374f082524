package mcpcall

import (
	"fmt"
	"strings"
)

// Identity is the caller as the server's authentication established it.
type Identity struct {
	// Tenant is the customer account the caller acts for.
	Tenant string
	// Principal is the authenticated caller within the tenant: the
	// token's subject, never a transport session id (a client that
	// reconnects gets a new one of those). It must not be empty.
	Principal string
}

// ScopeError is a tools/call request whose _meta or arguments do not place
// the call: keys are missing, are of the wrong type, or the identity is
// incomplete. The tool did not run.
type ScopeError struct {
	Tool string
	// Missing names the absent _meta keys, Invalid those of the wrong type
	// (RepeatArgument too, when it is neither a string nor an integer).
	Missing []string
	Invalid []string
	// Reason, when set, is what else was wrong.
	Reason string
}

// Error names the tool and the keys, so the client's author knows what to
// send.
func (e *ScopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentonce: tool %s: the call's scope is not given, so the tool did not run", e.Tool)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; missing _meta keys: %s", strings.Join(e.Missing, ", "))
	}
	if len(e.Invalid) > 0 {
		fmt.Fprintf(&b, "; _meta keys or arguments that are not strings: %s", strings.Join(e.Invalid, ", "))
	}
	if len(e.Missing) > 0 {
		b.WriteString(" (send both session and turn, or neither; the transport session id is never used in their place: it changes on every reconnect)")
	}
	return b.String()
}

// metaScope is what a request's _meta says about its place.
type metaScope struct {
	tenant, session, turn, discriminator, key string
	hasSession, hasTurn                       bool
}

// readMeta reads the scope keys of meta; a key of the wrong type is an
// error, an absent or null one is left empty.
func readMeta(tool string, meta map[string]any) (metaScope, *ScopeError) {
	var s metaScope
	e := &ScopeError{Tool: tool}
	read := func(key string, dst *string) bool {
		v, ok := meta[key]
		if !ok || v == nil {
			return false
		}
		str, ok := metaString(v)
		if !ok {
			e.Invalid = append(e.Invalid, key)
			return false
		}
		*dst = str
		return str != ""
	}
	read(MetaTenant, &s.tenant)
	s.hasSession = read(MetaSession, &s.session)
	s.hasTurn = read(MetaTurn, &s.turn)
	read(MetaDiscriminator, &s.discriminator)
	read(MetaKey, &s.key)
	if len(e.Invalid) > 0 {
		return s, e
	}
	return s, nil
}
