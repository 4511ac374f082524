package mcpcall

import (
	"github.com/agentonce/agentonce/journal"
)

// Hints are an MCP tool's behaviour annotations (readOnlyHint,
// destructiveHint, idempotentHint, openWorldHint); nil means not given,
// which the specification reads as false, true, false, true.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// HintsOf is what a server advertises for a tool of effect kind e:
//
//   - ReadOnly: readOnlyHint (and idempotentHint, not destructive).
//   - Idempotent: idempotentHint, not read-only.
//   - Keyed: idempotentHint, not read-only. The downstream deduplicates by
//     the key, and every repeat of the intent is sent with the same key, so
//     a repeat has no additional effect: idempotent because the key makes
//     it so.
//   - Unkeyed: destructiveHint, not idempotent: only the journal stands
//     between a repeat and a second effect.
//
// destructiveHint of Idempotent and Keyed tools and openWorldHint are left
// out: an effect kind does not tell them, and the specification's defaults
// (destructive, open world) are the cautious readings.
func HintsOf(e journal.Effect) Hints {
	yes, no := true, false
	switch e {
	case journal.ReadOnly:
		return Hints{ReadOnly: &yes, Destructive: &no, Idempotent: &yes}
	case journal.Idempotent, journal.Keyed:
		return Hints{ReadOnly: &no, Idempotent: &yes}
	default:
		return Hints{ReadOnly: &no, Destructive: &yes, Idempotent: &no}
	}
}

// EffectOf is the effect kind an agent gives a remote tool whose server it
// trusts, from the tool's hints: readOnlyHint → ReadOnly; dedupes (the
// tool's _meta has MetaDedupes: the server runs agentonce and keys a call
// by the key it is sent) → Keyed; idempotentHint → Idempotent; anything
// else → Unkeyed. The specification asks clients not to rely on the hints
// of a server they do not trust: a caller gives such a tool its configured
// kind, or Unkeyed, and never asks EffectOf.
func EffectOf(h Hints, dedupes bool) journal.Effect {
	switch {
	case h.ReadOnly != nil && *h.ReadOnly:
		return journal.ReadOnly
	case dedupes:
		return journal.Keyed
	case h.Idempotent != nil && *h.Idempotent:
		return journal.Idempotent
	default:
		return journal.Unkeyed
	}
}
