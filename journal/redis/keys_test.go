package redis

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestRecordKeyIsCanonical holds recordKey, which writes the key's text by
// hand, to the prefix, "r:" and uuid's own canonical form, for keys whose
// bytes cover every hex digit and both ends.
func TestRecordKeyIsCanonical(t *testing.T) {
	s := &Store{prefix: "agentonce:{ns}:", tags: []string{"agentonce:{ns}:"}}
	keys := []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0123abcd-4567-89ef-fedc-ba9876543210")}
	for i := 0; i < 64; i++ {
		keys = append(keys, uuid.New())
	}
	for _, k := range keys {
		if got, want := s.recordKey(k), s.prefix+"r:"+k.String(); got != want {
			t.Fatalf("recordKey(%v) = %q, want %q", k, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.recordKey(keys[0]) }); n != 1 {
		t.Fatalf("recordKey allocates %v times, want 1", n)
	}
}

// TestGuardKeyLayout holds guardKey to the layout every journal on a
// server was written with: the prefix, "g:" and the hex of the first 16
// bytes of the SHA-256 of each field's 8-byte big-endian length and bytes.
func TestGuardKeyLayout(t *testing.T) {
	s := &Store{prefix: "{agentonce}:", tags: []string{"{agentonce}:"}}
	want := func(fields ...string) string {
		h := sha256.New()
		for _, f := range fields {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(f)))
			h.Write(n[:])
			h.Write([]byte(f))
		}
		return s.prefix + "g:" + hex.EncodeToString(h.Sum(nil)[:16])
	}
	long := strings.Repeat("x", 300) // past the stack buffer
	for _, f := range [][3]string{{"", "", ""}, {"acme", "k1", "POST /v1/charges"}, {long, "s", long}} {
		if got := s.guardKey(f[0], f[1], f[2]); got != want(f[0], f[1], f[2]) {
			t.Fatalf("guardKey(%q) = %q, want %q", f, got, want(f[0], f[1], f[2]))
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.guardKey("acme", "k1", "POST /v1/charges") }); n != 1 {
		t.Fatalf("guardKey allocates %v times, want 1", n)
	}
}
