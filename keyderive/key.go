package keyderive

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"

	"github.com/google/uuid"
)

// Domain tags: the first field of every key's name, so that an intent key
// and a step key never share a name, and a new encoding gets a new tag.
const (
	intentTag = "agentonce/keyderive/intent/v1"
	stepTag   = "agentonce/keyderive/step/v1"
)

// Key returns the idempotency key of an intent: a UUIDv5 (RFC 9562) under
// namespace whose name is the length-prefixed sequence of the tag
// "agentonce/keyderive/intent/v1", in.Tenant, in.Session, in.Turn, in.Tool,
// in.Discriminator and canonical. Each field is preceded by its length as an
// 8-byte big-endian integer, so no two different intents make the same name.
// canonical should come from Canonicalize (and, when the tool has one, a
// Normalizer); Key does not check it.
func Key(namespace uuid.UUID, in Intent, canonical []byte) uuid.UUID {
	h := getHasher()
	h.begin(namespace, intentTag)
	h.field(in.Tenant)
	h.field(in.Session)
	h.field(in.Turn)
	h.field(in.Tool)
	h.field(in.Discriminator)
	h.length(len(canonical))
	h.flush()
	h.h.Write(canonical)
	return h.finish()
}

// ExplicitKey returns the key for a caller-supplied workflow or step key: a
// UUIDv5 under namespace whose name is the length-prefixed tag
// "agentonce/keyderive/step/v1", tenant and stepKey (encoded as in Key). The
// tenant scopes it: one step key in two tenants gives two keys.
func ExplicitKey(namespace uuid.UUID, tenant, stepKey string) uuid.UUID {
	h := getHasher()
	h.begin(namespace, stepTag)
	h.field(tenant)
	h.field(stepKey)
	h.flush()
	return h.finish()
}

// hasher streams a UUIDv5 name into SHA-1 through a small pooled buffer.
type hasher struct {
	h   hash.Hash
	buf []byte
	sum [sha1.Size]byte
}

var hasherPool = sync.Pool{New: func() any {
	return &hasher{h: sha1.New(), buf: make([]byte, 0, 512)}
}}

func getHasher() *hasher {
	h := hasherPool.Get().(*hasher)
	h.h.Reset()
	h.buf = h.buf[:0]
	return h
}

func (h *hasher) begin(namespace uuid.UUID, tag string) {
	h.buf = append(h.buf, namespace[:]...)
	h.field(tag)
}

func (h *hasher) length(n int) {
	h.buf = binary.BigEndian.AppendUint64(h.buf, uint64(n))
}

func (h *hasher) field(s string) {
	h.length(len(s))
	if len(h.buf)+len(s) > cap(h.buf) {
		h.flush()
		if len(s) > cap(h.buf) {
			h.h.Write([]byte(s))
			return
		}
	}
	h.buf = append(h.buf, s...)
}

func (h *hasher) flush() {
	h.h.Write(h.buf)
	h.buf = h.buf[:0]
}

// finish sets the UUID version (5) and variant (RFC 9562) bits, as
// uuid.NewSHA1 does, and returns the hasher to its pool.
func (h *hasher) finish() uuid.UUID {
	var u uuid.UUID
	copy(u[:], h.h.Sum(h.sum[:0]))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	hasherPool.Put(h)
	return u
}

// Derived is what Derive computes for one call.
type Derived struct {
	// Key is the idempotency key (Key or ExplicitKey).
	Key uuid.UUID
	// Fingerprint is the SHA-256 of Canonical.
	Fingerprint Fingerprint
	// Canonical is the canonical, normalized input.
	Canonical []byte
}

// Deriver turns a tool call into its key, fingerprint and canonical input.
// Its fields are read-only after first use; it is safe for concurrent use.
type Deriver struct {
	// Namespace is the per-deployment secret namespace of every key. The
	// nil UUID is refused with ErrNilNamespace.
	Namespace uuid.UUID
	// Options limits the input; nil means defaults.
	Options *Options
	// Normalizer is the tool's schema-aware normalization; nil means none.
	Normalizer *Normalizer
}

// Derive canonicalizes input, normalizes it when d has a Normalizer, and
// derives the key and fingerprint. Errors are those of Canonicalize and
// ErrNilNamespace; on error nothing is derived.
func (d *Deriver) Derive(in Intent, input []byte) (Derived, error) {
	r, err := d.derive(input)
	if err == nil {
		r.Key = Key(d.Namespace, in, r.Canonical)
	}
	return r, err
}

// DeriveExplicit is Derive for a caller-supplied step key: the key is
// ExplicitKey(d.Namespace, in.Tenant, stepKey); the fingerprint still
// detects a step key reused with a different payload.
func (d *Deriver) DeriveExplicit(in Intent, stepKey string, input []byte) (Derived, error) {
	r, err := d.derive(input)
	if err == nil {
		r.Key = ExplicitKey(d.Namespace, in.Tenant, stepKey)
	}
	return r, err
}

// derive is Derive without the key.
func (d *Deriver) derive(input []byte) (Derived, error) {
	if d.Namespace == uuid.Nil {
		return Derived{}, fmt.Errorf("keyderive: Deriver.Namespace: %w", ErrNilNamespace)
	}
	canonical, err := Canonicalize(input, d.Options)
	if err == nil && d.Normalizer != nil {
		canonical, err = d.Normalizer.normalize(canonical)
	}
	if err != nil {
		return Derived{}, err
	}
	return Derived{Fingerprint: FingerprintOf(canonical), Canonical: canonical}, nil
}
