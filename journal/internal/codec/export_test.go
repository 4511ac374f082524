package codec

import "github.com/agentonce/agentonce/journal"

// Seal exposes the checksum's sealing to tests.
var Seal = seal

// EncodeLegacy encodes r as a version without checksums wrote it.
func EncodeLegacy(r *journal.Record) []byte {
	v := Encode(nil, r)
	return append(v[:1:1], v[sealLen:]...)
}
