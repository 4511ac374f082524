package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestEmbedJSON: bytes that are compact JSON are embedded as they are;
// anything else goes base64, so every record round-trips byte for byte.
func TestEmbedJSON(t *testing.T) {
	tests := []struct {
		in     string
		nilIn  bool
		raw    string
		base64 bool
	}{
		{nilIn: true},
		{in: `{"a":1}`, raw: `{"a":1}`},
		{in: `{"a": 1}`, base64: true}, // not compact: embedding would change it
		{in: `<&>`, base64: true},
		{in: ``, base64: true}, // empty but not nil
		{in: `"\u003c"`, raw: `"\u003c"`},
		{in: `"<"`, raw: `"<"`},
		{in: "\"\xff\"", raw: "\"\xff\""},
	}
	for _, tt := range tests {
		var b []byte
		if !tt.nilIn {
			b = []byte(tt.in)
		}
		raw, b64 := embedJSON(b)
		if string(raw) != tt.raw || (b64 != nil) != tt.base64 {
			t.Errorf("embedJSON(%q) = %q, base64 %v; want %q, %v", tt.in, raw, b64 != nil, tt.raw, tt.base64)
		}
		back, err := unembedJSON("output", raw, b64)
		if err != nil || !bytes.Equal(back, b) || (back == nil) != (b == nil) {
			t.Errorf("unembedJSON(embedJSON(%q)) = %q, %v", tt.in, back, err)
		}
	}
}

// TestRecordJSONRoundTrip: the one JSON form carries every field of a
// Record, an attempt's QuietAt included (the export form before it had
// none, so an exported journal lost its settle windows).
func TestRecordJSONRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	r := Record{
		Version: SchemaVersion, Key: uuid.MustParse("6ba7b812-9dad-11d1-80b4-00c04fd430c8"),
		Effect: Unkeyed, Input: []byte(`{"a":"<b>"}`), State: StateUnknown, Output: []byte("not json"),
		ErrorClass: "unknown", ErrorMessage: "timeout",
		Attempts: []Attempt{
			{ID: "a1", Start: t0, End: t0.Add(time.Second), Class: "transient", Error: "503", QuietAt: t0.Add(time.Minute)},
			{ID: "a2", Start: t0.Add(2 * time.Second), QuietAt: t0.Add(3 * time.Minute)},
		},
		Lease:      Lease{Owner: "agent-1", Token: 4, Expires: t0.Add(time.Hour)},
		Resolution: &Resolution{State: StateSucceeded, Output: []byte(`{"id":1}`), Reason: "checked", By: "ops", At: t0.Add(2 * time.Hour)},
		Created:    t0, Updated: t0.Add(time.Second), Expires: t0.Add(24 * time.Hour),
	}
	r.Intent.Tenant, r.Intent.Session, r.Intent.Turn, r.Intent.Tool, r.Intent.Discriminator = "t", "s", "1", "charge", "d"
	r.Fingerprint[0] = 0xab
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !strings.Contains(string(b), `"quiet_at":"2026-03-01T09:01:00.123456789Z"`) {
		t.Errorf("no quiet_at in %s", b)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, r)
	}
	if !strings.Contains(string(b), `{"a":"<b>"}`) {
		t.Errorf("SetEscapeHTML(false) escaped the input: %s", b)
	}
	// json.Marshal escapes, as it does every value.
	if m, _ := json.Marshal(&r); !strings.Contains(string(m), `\u003cb\u003e`) {
		t.Errorf("json.Marshal did not escape: %s", m)
	}
}

// TestRecordJSONRefuses: bad input gets an error naming what was wrong;
// what a newer version wrote wraps ErrNewerVersion.
func TestRecordJSONRefuses(t *testing.T) {
	good := `{"version":1,"key":"6ba7b812-9dad-11d1-80b4-00c04fd430c8","effect":"unkeyed","state":"succeeded","created":"2026-03-01T09:00:00Z"}`
	var r Record
	if err := json.Unmarshal([]byte(good), &r); err != nil {
		t.Fatalf("good record: %v", err)
	}
	for _, tt := range []struct {
		name, in, want string
		newer          bool
	}{
		{"unknown field", strings.Replace(good, `"version":1`, `"version":1,"colour":"red"`, 1), `unknown field "colour"`, false},
		{"newer version", strings.Replace(good, `"version":1`, `"version":99`, 1), "record version 99", true},
		{"newer state", strings.Replace(good, `"succeeded"`, `"vanished"`, 1), "vanished", true},
		{"newer effect", strings.Replace(good, `"unkeyed"`, `"teleport"`, 1), "teleport", true},
		{"nil key", strings.Replace(good, "6ba7b812-9dad-11d1-80b4-00c04fd430c8", uuid.Nil.String(), 1), "nil UUID", false},
		{"bad fingerprint", strings.Replace(good, `"version":1`, `"version":1,"fingerprint":"zz"`, 1), "fingerprint", false},
		{"no created", strings.Replace(good, `,"created":"2026-03-01T09:00:00Z"`, "", 1), "created is missing", false},
		{"both output forms", strings.Replace(good, `"version":1`, `"version":1,"output":{},"output_base64":"e30="`, 1), "both output", false},
	} {
		err := json.Unmarshal([]byte(tt.in), &r)
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrNewerVersion) != tt.newer {
			t.Errorf("%s: %v; want an error containing %q (newer version: %v)", tt.name, err, tt.want, tt.newer)
		}
	}
}
