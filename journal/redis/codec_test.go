package redis

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

func sample() journal.Record {
	t := time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.UTC)
	return journal.Record{Version: journal.SchemaVersion, Key: uuid.MustParse("6ba7b812-9dad-11d1-80b4-00c04fd430c8"),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "order-77", Turn: "1", Tool: "POST /v1/charges", Discriminator: "d"},
		Fingerprint: keyderive.FingerprintOf([]byte("x")), Effect: journal.Keyed, Input: []byte(`{"a":1}`),
		State: journal.StateSucceeded, Output: []byte{}, ErrorClass: "c", ErrorMessage: "m",
		Attempts:   []journal.Attempt{{ID: "a1", Start: t, End: t.Add(time.Second), Class: "x", Error: "e", QuietAt: t}, {ID: "a2", Start: t}},
		Lease:      journal.Lease{Owner: "host:1", Token: 7, Expires: t.Add(time.Minute)},
		Resolution: &journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{}`), Reason: "r", By: "ops", At: t},
		Created:    t, Updated: t, Expires: t.Add(24 * time.Hour)}
}

// Every field survives, nil and empty slices apart.
func TestCodecRoundTrip(t *testing.T) {
	r := sample()
	got, err := decode("k", encode(&r))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("decode(encode(r)) =\n%+v\nwant\n%+v", got, r)
	}
	r.Input, r.Resolution = nil, nil
	if got, _ := decode("k", encode(&r)); got.Input != nil || got.Resolution != nil {
		t.Errorf("nil Input and Resolution came back as %v, %v", got.Input, got.Resolution)
	}
}

// Damaged bytes are ErrCorrupt, never a panic; what decodes re-encodes to
// the same bytes.
func FuzzDecode(f *testing.F) {
	r := sample()
	f.Add(encode(&r))
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decode("k", v)
		if err != nil {
			return
		}
		if !bytes.Equal(encode(&got), v) {
			t.Fatalf("decode then encode changed %x", v)
		}
	})
}
