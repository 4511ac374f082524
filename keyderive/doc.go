// Package keyderive turns an agent's tool call into its idempotency key:
// canonical JSON (RFC 8785, JCS), optional schema-aware normalization, and
// UUIDv5 key and SHA-256 fingerprint derivation. Pure functions, no I/O.
package keyderive
