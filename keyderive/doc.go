// Package keyderive turns an agent's tool call into its idempotency key:
// canonical JSON (RFC 8785, JCS), optional schema-aware normalization, and
// UUIDv5 key and SHA-256 fingerprint derivation. Pure functions, no I/O.
//
// A Deriver canonicalizes the input, normalizes it with the tool's
// Normalizer (built from its input JSON Schema and volatile paths) if it
// has one, then derives Key and FingerprintOf from it. Two calls that mean
// the same intent (tenant, session, user turn, tool, discriminator and
// input, however spelled) get the same key; any difference gives another.
//
// Canonicalize implements RFC 8785 in one pass, with one departure
// (docs/design.md, "Canonical input"): a number above 2^53 in magnitude
// keeps its exact value, so 9007199254740993 does not become ...992 and
// merge two order ids into one key.
//
// Key is a UUIDv5 under a namespace that must be a per-deployment secret
// (the nil namespace is refused); its name is length-prefixed fields
// behind a versioned tag. These encodings are stored in journals and sent
// downstream: they never change. docs/keyderive.md is the long form.
//
// # Caveats
//
//   - Above 2^53 a float spelled with more digits than its shortest form
//     is taken for the integer it spells: two spellings of one float64 can
//     get two keys; two different integers never get one.
//   - Up to 2^53 numbers follow float64: 0.1 and 0.10000000000000001 are
//     one value, 1e-400 is 0.
//   - Canonical output can grow (1e20 is 21 digits), and unsorted nested
//     objects cost up to size × depth bytes of copying.
//   - Normalization ignores $ref, items, allOf/anyOf/oneOf and
//     additionalProperties; a property whose name holds a dot cannot be
//     made volatile. Normalizer.Normalize alone has no size limit.
//   - Everything is safe for concurrent use; a Deriver's fields must not
//     change once in use.
package keyderive
