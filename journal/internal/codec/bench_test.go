package codec_test

import (
	"testing"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// BenchmarkDecodeRecord is the decoder alone, on the fuzz seeds' full
// record (two attempts, a resolution) and a settled one-attempt record
// like a replay reads.
func BenchmarkDecode(b *testing.B) {
	full := fuzzSeeds()[0]
	one := full
	one.Attempts = one.Attempts[:1]
	one.Resolution = nil
	for _, tc := range []struct {
		name string
		r    journal.Record
	}{{"full", full}, {"replay", one}} {
		b.Run(tc.name, func(b *testing.B) {
			v := codec.Encode(nil, &tc.r)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codec.Decode(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
