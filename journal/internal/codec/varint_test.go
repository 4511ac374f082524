package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// exactVarint must answer as binary.Varint does, with n == len(p), for
// every payload: the encodings of many numbers, and bytes of every length
// around the fast path's (nine and ten), damaged or not.
func TestExactVarint(t *testing.T) {
	check := func(p []byte) {
		t.Helper()
		v, n := binary.Varint(p)
		got, ok := exactVarint(p)
		if ok != (n == len(p)) || ok && got != v {
			t.Fatalf("exactVarint(%x) = %d, %v; binary.Varint: %d, %d", p, got, ok, v, n)
		}
	}
	nums := []int64{0, 1, -1, 63, -64, 64, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).UnixNano(), -time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).UnixNano(),
		1 << 55, 1 << 56, 1<<62 - 1, 1 << 62, -(1 << 62)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		nums = append(nums, int64(rng.Uint64()), int64(rng.Uint64()>>rng.IntN(64)))
	}
	for _, x := range nums {
		p := binary.AppendVarint(nil, x)
		check(p)
		check(append(p, 0)) // one byte too many
		check(p[:len(p)-1]) // one too few
		q := append([]byte(nil), p...)
		q[len(q)-1] |= 0x80 // never ends
		check(q)
	}
	for range 200000 {
		p := make([]byte, 8+rng.IntN(4))
		for i := range p {
			p[i] = byte(rng.Uint32())
			if rng.IntN(4) != 0 {
				p[i] |= 0x80
			}
		}
		if rng.IntN(2) == 0 {
			p[len(p)-1] &= 0x7f
		}
		if rng.IntN(3) == 0 {
			p[len(p)-1] &= 1
		}
		check(p)
	}
	// Non-minimal encodings, which binary.Varint accepts.
	check([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
	check([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
	check([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	check([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
}

// A nested message (an attempt, a resolution) is encoded in place behind
// a one-byte length, widened when the message is 128 bytes or more: the
// bytes must be those of the length's uvarint and then the message, at
// every size around the widths.
func TestSubMessageLengths(t *testing.T) {
	for _, n := range []int{0, 1, 100, 127 - 4, 127 - 3, 127 - 2, 128, 129, 300, 16383 - 3, 16384, 20000, 3 << 20} {
		r := journal.Record{Key: [16]byte{1}, State: journal.StateFailed, Attempts: []journal.Attempt{{ID: "a", Error: string(make([]byte, n))}, {ID: "b"}},
			Resolution: &journal.Resolution{State: journal.StateFailed, Reason: string(make([]byte, n))}}
		v := Encode(nil, &r)
		got, err := Decode(v)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(got.Attempts) != 2 || got.Attempts[0].Error != r.Attempts[0].Error || got.Attempts[1].ID != "b" || got.Resolution.Reason != r.Resolution.Reason {
			t.Fatalf("n=%d: decoded %d attempts, error of %d bytes, reason of %d", n, len(got.Attempts), len(got.Attempts[0].Error), len(got.Resolution.Reason))
		}
		// The attempt field by hand: tag, uvarint length, then ID and Error.
		var want []byte
		inner := append([]byte{tagAttemptID, 1, 'a'}, binary.AppendUvarint([]byte{tagAttemptError}, uint64(n))...)
		inner = append(inner, make([]byte, n)...)
		if n == 0 {
			inner = []byte{tagAttemptID, 1, 'a'}
		}
		want = append(binary.AppendUvarint([]byte{tagAttempt}, uint64(len(inner))), inner...)
		if !bytes.Contains(v, want) {
			t.Fatalf("n=%d: the encoding does not hold the attempt field as tag, length, message", n)
		}
	}
}
