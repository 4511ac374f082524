package redis

import (
	"testing"

	"github.com/google/uuid"
)

// TestRecordKeyIsCanonical holds recordKey, which writes the key's text by
// hand, to the prefix, "r:" and uuid's own canonical form, for keys whose
// bytes cover every hex digit and both ends.
func TestRecordKeyIsCanonical(t *testing.T) {
	s := &Store{prefix: "agentonce:{ns}:"}
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
