package keyderive

import (
	"crypto/sha256"
	"encoding/hex"
)

// Intent names one logical action of an agent: the fields that, together
// with the canonical input, make up its identity. All retries of one intent
// share one key.
type Intent struct {
	// Tenant scopes every key; nothing is shared across tenants.
	Tenant string
	// Session is the agent conversation or run the call belongs to.
	Session string
	// Turn is the index or id of the user's message that started the work.
	// It does not advance on every model round-trip.
	Turn string
	// Tool is the registered tool name.
	Tool string
	// Discriminator is optional extra identity for when the user truly wants
	// the same thing twice in one turn (a sequence number, a request id).
	Discriminator string
}

// Fingerprint is the SHA-256 of an intent's canonical input. Two calls with
// the same key and different fingerprints are a payload mismatch.
type Fingerprint [sha256.Size]byte

// FingerprintOf returns the fingerprint of canonical input bytes.
func FingerprintOf(canonical []byte) Fingerprint {
	return Fingerprint(sha256.Sum256(canonical))
}

// String returns the fingerprint in lower-case hexadecimal.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// IsZero reports whether f is the zero fingerprint (none was computed).
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }
