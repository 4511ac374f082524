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
//   - Idempotent, Keyed: idempotentHint, not read-only (a Keyed repeat
//     carries the same key, which the downstream deduplicates by).
//   - Unkeyed: destructiveHint, not idempotent.
//
// Other hints are left out: an effect kind does not tell them, and the
// specification's defaults (destructive, open world) are the cautious
// readings.
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
// trusts, from the tool's hints: readOnlyHint → ReadOnly; dedupes (its
// _meta has MetaDedupes) → Keyed; idempotentHint → Idempotent; anything
// else → Unkeyed. A tool of a server not trusted gets its configured
// kind, or Unkeyed, never EffectOf's.
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
