package journal_test

import (
	"testing"

	"github.com/agentonce/agentonce/journal"
)

// BenchmarkDecodeRecord is the decoder alone, on the fuzz seeds' full
// record (two attempts, a resolution) and a settled one-attempt record
// like a replay reads.
func BenchmarkDecodeRecord(b *testing.B) {
	full := fuzzSeeds()[0]
	one := full
	one.Attempts = one.Attempts[:1]
	one.Resolution = nil
	for _, tc := range []struct {
		name string
		r    journal.Record
	}{{"full", full}, {"replay", one}} {
		b.Run(tc.name, func(b *testing.B) {
			v := journal.EncodeRecord(nil, &tc.r)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := journal.DecodeRecord(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
