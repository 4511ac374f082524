package journal

// EncodeRecord, DecodeRecord and Seal expose the record encoding to tests.
var (
	EncodeRecord = encodeRecord
	DecodeRecord = decodeRecord
	Seal         = seal
)

// EncodeLegacyRecord encodes r as a version without checksums wrote it.
func EncodeLegacyRecord(r *Record) []byte {
	v := encodeRecord(nil, r)
	return append(v[:1:1], v[sealLen:]...)
}
