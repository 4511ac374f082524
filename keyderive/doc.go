// Package keyderive turns an agent's tool call into its idempotency key:
// canonical JSON (RFC 8785, JCS), optional schema-aware normalization, and
// UUIDv5 key and SHA-256 fingerprint derivation. Pure functions, no I/O.
//
// A Deriver does all three: Canonicalize the input, Normalize it with the
// tool's Normalizer if it has one, then Key and FingerprintOf the result.
// Two calls that mean the same intent — same tenant, session, user turn,
// tool, discriminator and input, however the input is spelled — get the
// same key; any difference in those gives another key.
//
// # Canonical form
//
// Canonicalize implements RFC 8785 in a single pass over the input, without
// building a tree: object members sorted by UTF-16 code units, no
// insignificant whitespace, minimal string escaping, numbers in the
// ECMAScript form of their float64 value. It rejects, with a *SyntaxError
// naming the byte offset: invalid JSON (ErrSyntax), duplicate member names
// after unescaping (ErrDuplicateKey), invalid UTF-8 and unpaired surrogate
// escapes (ErrInvalidUTF8), numbers beyond the float64 range
// (ErrNumber), input over Options.MaxBytes (ErrTooLarge) and nesting over
// Options.MaxDepth (ErrTooDeep).
//
// One departure from RFC 8785, for numbers a float64 cannot hold
// (docs/design.md, "Canonical input"): a number of magnitude above 2^53 keeps
// its exact value. An integer there is written as its decimal digits — no
// fraction, no exponent, no leading zeros — unless the RFC 8785 form denotes
// exactly the same integer, in which case the RFC 8785 form is kept; a
// non-integer there (no float64 holds one) is written as its integer digits,
// a point and its fraction digits without trailing zeros. So
// 9007199254740993 and 9007199254740993.0 stay 9007199254740993 (RFC 8785
// would write 9007199254740992, merging two order ids into one key),
// 12345678901234567890.5 and 12345678901234567890.25 stay apart, while 1e30
// stays 1e+30 and 1.0e20 becomes 100000000000000000000, as in RFC 8785.
// Every canonical form still denotes exactly one value, so no two different
// numbers above 2^53 share one, and every number up to 2^53 in magnitude
// canonicalizes as RFC 8785 says.
//
// # Keys
//
// Key is a UUIDv5 under a namespace that must be a per-deployment secret
// (docs/design.md, "Security and privacy"). Its name is a sequence of
// fields, each preceded by its length as an 8-byte big-endian integer: the
// tag "agentonce/keyderive/intent/v1", then tenant, session, turn, tool,
// discriminator and the canonical input. ExplicitKey uses the tag
// "agentonce/keyderive/step/v1", tenant and the caller's step key. These
// encodings are stored in journals and sent downstream: they never change;
// a new encoding would get a new tag. A Deriver refuses the nil namespace
// (ErrNilNamespace).
//
// # Normalization
//
// A Normalizer, built from a tool's input JSON Schema and a list of volatile
// property paths, fills declared defaults, drops null for declared optional
// properties, and drops volatile properties, at the top level and in nested
// object properties. It reads and writes canonical JSON.
//
// # Caveats
//
//   - Above 2^53 every float64 is an integer, so a float written with more
//     digits than its shortest form (3.3333333333333331e+20, as printf's
//     %.17g writes it) is taken for the integer it spells and kept exact,
//     where RFC 8785 would write 333333333333333300000. Two spellings of one
//     float64 can then get two keys; two different integers never get one.
//   - Up to 2^53, non-integers follow float64: 0.1 and 0.10000000000000001
//     are one value, and numbers too small for float64 (1e-400) become 0, as
//     in RFC 8785.
//   - Canonical output is usually shorter than the input, but numbers can
//     grow: 1e20 becomes 21 digits, and an exact big integer up to 309.
//   - Sorting happens in place in the output, so an object whose members
//     are out of order is copied once more; nested unsorted objects cost
//     up to size × depth bytes of copying (64 MiB at the default limits,
//     a few milliseconds). Raising MaxDepth far raises that bound.
//   - Normalization reads only type, properties, required and default;
//     "$ref", "items", "allOf"/"anyOf"/"oneOf" and "additionalProperties"
//     are ignored, so defaults behind them are not filled. null is dropped
//     only for properties the schema declares and does not require. A
//     volatile path's segments are separated by dots, so a property whose
//     name holds a dot cannot be made volatile.
//   - Normalizer.Normalize accepts any JSON and canonicalizes it first with
//     no size limit and a depth limit of 10000; a Deriver's normalization
//     works on its already limited canonical input.
//   - All functions are safe for concurrent use; a Deriver's fields must not
//     change once it is in use.
package keyderive
