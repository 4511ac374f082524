package codec_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/keyderive"
)

func fuzzSeeds() []journal.Record {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	full := journal.Record{
		Key:         uuid.MustParse("0b9d2f3c-6a54-5e1b-9d07-3f4a8c1e2b77"),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s1", Turn: "3", Tool: "charge", Discriminator: "seq-2"},
		Fingerprint: keyderive.FingerprintOf([]byte(`{"a":1}`)),
		Effect:      journal.Keyed,
		Input:       []byte(`{"a":1}`),
		State:       journal.StateSucceeded,
		Output:      []byte{},
		ErrorClass:  "retryable",
		Attempts: []journal.Attempt{
			{ID: "a1", Start: t0, End: t0.Add(time.Second), Class: "retryable", Error: "503"},
			{ID: "a2", Start: t0.Add(2 * time.Second), QuietAt: t0.Add(time.Minute)},
		},
		Lease:      journal.Lease{Owner: "host/1", Token: 1 << 40, Expires: t0.Add(time.Minute)},
		Resolution: &journal.Resolution{State: journal.StateSucceeded, Output: []byte("x"), Reason: "seen", By: "ops", At: t0},
		Created:    t0, Updated: t0, Expires: t0.Add(journal.DefaultTTL),
	}
	minimal := journal.Record{Key: uuid.New(), State: journal.StatePending}
	old := journal.Record{Key: uuid.New(), State: journal.StateUnknown, Created: time.Unix(0, -5).UTC()}
	awaiting := journal.Record{Key: uuid.New(), State: journal.StateAwaiting, Fingerprint: full.Fingerprint, Created: t0,
		Approval: &journal.Approval{Need: 2, Deadline: t0.Add(time.Hour), Given: []journal.Resolution{
			{State: journal.StatePending, By: "alice", Reason: "checked", At: t0.Add(time.Minute), Fingerprint: full.Fingerprint}}}}
	return []journal.Record{full, minimal, old, awaiting}
}

// FuzzDecodeRecord: decoding arbitrary bytes never panics, and whatever
// decodes re-encodes to bytes that decode to the same record (and encode to
// the same bytes again). The legacy seeds (no checksum) let the fuzzer reach
// the field decoder, which a sealed seed guards behind its checksum.
func FuzzDecode(f *testing.F) {
	for _, r := range fuzzSeeds() {
		f.Add(codec.Encode(nil, &r))
		f.Add(codec.EncodeLegacy(&r))
	}
	// A field from the future (tag 99) is skipped.
	r := fuzzSeeds()[1]
	f.Add(withFutureField(codec.Encode(nil, &r)))
	f.Add(append(codec.EncodeLegacy(&r), 99, 3, 'n', 'e', 'w'))
	f.Add([]byte{})
	f.Add([]byte{1, 1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := codec.Decode(b)
		if err != nil {
			return
		}
		enc := codec.Encode(nil, &r)
		r2, err := codec.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)) error: %v", r, err)
		}
		if enc2 := codec.Encode(nil, &r2); string(enc2) != string(enc) {
			t.Fatalf("encoding is not stable:\n%x\n%x", enc, enc2)
		}
	})
}

// FuzzRecordDamage: a stored record with any one byte changed, to any other
// value, fails to decode with ErrCorrupt; it never decodes, as another
// record or as itself. The checksum covers every byte but its own, and a
// damaged checksum no longer matches the bytes.
func FuzzRecordDamage(f *testing.F) {
	for i, r := range fuzzSeeds() {
		n := len(codec.Encode(nil, &r))
		for _, pos := range []int{0, 1, 2, 3, 6, 7, 8, n / 2, n - 1} {
			f.Add(uint8(i), r.Output, r.ErrorMessage, uint16(pos), byte(0x01))
		}
		f.Add(uint8(i), r.Output, r.ErrorMessage, uint16(n-1), byte(0xff))
	}
	f.Add(uint8(0), []byte(`{"sent":true}`), "", uint16(60), byte('t'^'f'))
	f.Fuzz(func(t *testing.T, seed uint8, output []byte, msg string, pos uint16, mask byte) {
		if mask == 0 {
			return // no change
		}
		seeds := fuzzSeeds()
		r := seeds[int(seed)%len(seeds)]
		r.Output, r.ErrorMessage = output, msg
		enc := codec.Encode(nil, &r)
		at := int(pos) % len(enc)
		enc[at] ^= mask
		got, err := codec.Decode(enc)
		if err == nil {
			t.Fatalf("Decode(record %s with byte %d of %d xor %#02x) = %+v, nil; want ErrCorrupt", r.Key, at, len(enc), mask, got)
		}
		if !errors.Is(err, journal.ErrCorrupt) {
			t.Fatalf("Decode(record %s with byte %d of %d xor %#02x) error %v; want ErrCorrupt", r.Key, at, len(enc), mask, err)
		}
	})
}

// withFutureField appends a field of a tag this package does not know to a
// sealed record and seals it again, as a newer writer would.
func withFutureField(enc []byte) []byte {
	b := append(append([]byte(nil), enc...), 99, 3, 'n', 'e', 'w')
	codec.Seal(b)
	return b
}

func TestRecordEncodingRoundTrip(t *testing.T) {
	for _, want := range fuzzSeeds() {
		enc := codec.Encode(nil, &want)
		got, err := codec.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%s)) error: %v", want.Key, err)
		}
		want.Version = journal.SchemaVersion
		sameRecord(t, "round trip", got, want)
		if (got.Output == nil) != (want.Output == nil) || (got.Input == nil) != (want.Input == nil) {
			t.Errorf("round trip of %s: Input nil %v, Output nil %v; want %v, %v", want.Key, got.Input == nil, got.Output == nil, want.Input == nil, want.Output == nil)
		}
		if len(got.Attempts) != len(want.Attempts) || (want.Resolution != nil) != (got.Resolution != nil) ||
			fmt.Sprint(got.Approval) != fmt.Sprint(want.Approval) {
			t.Errorf("round trip of %s = %+v; want %+v", want.Key, got, want)
		}
		for i := range want.Attempts {
			if !got.Attempts[i].Start.Equal(want.Attempts[i].Start) || !got.Attempts[i].End.Equal(want.Attempts[i].End) {
				t.Errorf("round trip of %s: attempt %d = %+v; want %+v", want.Key, i, got.Attempts[i], want.Attempts[i])
			}
		}
	}
	// Unknown tags are skipped (forward compatibility); a newer format
	// byte is refused.
	r := fuzzSeeds()[0]
	enc := codec.Encode(nil, &r)
	if got, err := codec.Decode(withFutureField(enc)); err != nil || got.Key != r.Key {
		t.Errorf("Decode(record + unknown tag 99) = %v, %v; want the record", got.Key, err)
	}
	newer := append([]byte{journal.SchemaVersion + 1}, enc[1:]...)
	codec.Seal(newer)
	if _, err := codec.Decode(newer); !errors.Is(err, journal.ErrNewerVersion) {
		t.Errorf("Decode(format %d) error %v; want ErrNewerVersion", journal.SchemaVersion+1, err)
	}
}

func TestRecordDecodeAllocs(t *testing.T) {
	r := fuzzSeeds()[0]
	enc := codec.Encode(nil, &r)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := codec.Decode(enc); err != nil {
			t.Fatal(err)
		}
	})
	// The buffer copy, the attempts slice and the resolution.
	if allocs > 3 {
		t.Errorf("DecodeRecord allocates %v times; want at most 3", allocs)
	}
}

// An encoding into a buffer that has room costs no allocation: the bbolt
// store encodes every write into a recycled buffer, and the encoder must
// not escape to the heap through its nested messages. (Into nil it costs
// the buffer, and under -race slices.Grow a second.)
func TestRecordEncodeAllocs(t *testing.T) {
	r := fuzzSeeds()[0]
	if len(r.Attempts) == 0 {
		t.Fatal("the seed record has no attempt: nothing nested to encode")
	}
	buf := make([]byte, 0, 2*len(codec.Encode(nil, &r)))
	if allocs := testing.AllocsPerRun(100, func() { codec.Encode(buf, &r) }); allocs > 0 {
		t.Errorf("EncodeRecord into a buffer with room allocates %v times; want 0", allocs)
	}
}

// sameRecord fails the test unless got and want encode alike.
func sameRecord(t *testing.T, what string, got, want journal.Record) {
	t.Helper()
	ge, we := codec.Encode(nil, &got), codec.Encode(nil, &want)
	if string(ge) != string(we) {
		t.Fatalf("%s: record %s = %+v; want %+v", what, want.Key, got, want)
	}
}

// An awaiting record without its approval is corrupt, never decided on:
// the state machine reads the approval of every awaiting record.
func TestAwaitingWithoutApprovalIsCorrupt(t *testing.T) {
	r := journal.Record{Key: uuid.New(), State: journal.StateAwaiting}
	if _, err := codec.Decode(codec.Encode(nil, &r)); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Decode(awaiting, no approval) error = %v; want ErrCorrupt", err)
	}
}
