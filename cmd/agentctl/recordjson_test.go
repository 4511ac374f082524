package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// TestExportOutputRoundTrip: every output round-trips byte for byte through
// export and import (journal's TestEmbedJSON checks which form each takes).
func TestExportOutputRoundTrip(t *testing.T) {
	tests := []struct {
		in    string
		nilIn bool
	}{
		{nilIn: true},
		{in: `{"a":1}`},
		{in: `{"a": 1}`}, // not compact: embedding would change it
		{in: `<&>`},
		{in: ``}, // empty but not nil
		{in: `"\u003c"`},
		{in: `"<"`},
		{in: "\"\xff\""},
	}
	for _, tt := range tests {
		var b []byte
		if !tt.nilIn {
			b = []byte(tt.in)
		}
		// Through the writer export uses and the reader import uses.
		t0 := time.Unix(1, 0)
		r := journal.Record{Version: 1, State: journal.StateSucceeded, Output: b, Created: t0, Updated: t0, Expires: t0.Add(time.Hour),
			Attempts: []journal.Attempt{{ID: "a1", Start: t0, End: t0}}, Lease: journal.Lease{Token: 1}}
		r.Key[15] = 1
		recs, err := throughExport(t, r)
		if err != nil || len(recs) != 1 || !bytes.Equal(recs[0].rec.Output, b) || (recs[0].rec.Output == nil) != (b == nil) {
			t.Errorf("export/import of output %q = %+v, %v", tt.in, recs, err)
		}
	}
}

// FuzzImportLine: any line either fails with an error naming the line, or
// parses to a record whose export form parses back to the same record
// (and the same line, once normalized).
func FuzzImportLine(f *testing.F) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	seeds := []journal.Record{
		{Version: 1, State: journal.StateSucceeded, Output: []byte(`{"ok":true}`), Input: []byte(`{"a":1}`), Created: now, Updated: now, Expires: now.Add(time.Hour)},
		{Version: 1, State: journal.StatePending, Attempts: []journal.Attempt{{ID: "x", Start: now}}, Lease: journal.Lease{Owner: "o", Token: 3, Expires: now}, Created: now},
		{Version: 1, State: journal.StateFailed, Output: []byte("not json"), Resolution: &journal.Resolution{State: journal.StateFailed, Reason: "r", By: "b", At: now}, Created: now},
	}
	for i, r := range seeds {
		r.Key[0], r.Key[15] = byte(i+1), 1
		b, _ := json.Marshal(&r)
		f.Add(string(b))
	}
	f.Add(`{"agentonce_export":1,"namespace":"6ba7b812-9dad-11d1-80b4-00c04fd430c8"}`)
	f.Add(`{"agentonce_export":3,"seal":"hmac-sha256","key_id":"` + exportSealKey(testNS).id() + `"}`)
	f.Add(`{"key":"nope"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		recs, err := readExport(strings.NewReader(line), "fuzz", testNS)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz line 1") && !strings.Contains(err.Error(), "reading fuzz") {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}
		for _, l := range recs {
			b1, err := json.Marshal(&l.rec)
			if err != nil {
				t.Fatal(err)
			}
			again, err := readExport(bytes.NewReader(b1), "again", testNS)
			if err != nil || len(again) != 1 {
				t.Fatalf("export form %s does not parse back: %v", b1, err)
			}
			b2, _ := json.Marshal(&again[0].rec)
			if !bytes.Equal(b1, b2) {
				t.Fatalf("round trip not stable:\n%s\n%s", b1, b2)
			}
		}
	})
}

// TestExportKeepsQuietAt: an attempt's settle window survives export and
// import (the export form before journal.Record's own had no quiet_at, so
// an imported journal let a takeover run while the attempt could still act).
func TestExportKeepsQuietAt(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	r := journal.Record{Version: 1, State: journal.StatePending, Created: t0, Updated: t0, Expires: t0.Add(time.Hour),
		Attempts: []journal.Attempt{{ID: "a1", Start: t0, QuietAt: t0.Add(5 * time.Minute)}}, Lease: journal.Lease{Token: 1}}
	r.Key[15] = 7
	recs, err := throughExport(t, r)
	if err != nil || len(recs) != 1 || len(recs[0].rec.Attempts) != 1 || !recs[0].rec.Attempts[0].QuietAt.Equal(r.Attempts[0].QuietAt) {
		t.Fatalf("export/import of an attempt quiet until %v = %+v, %v", r.Attempts[0].QuietAt, recs, err)
	}
}

// throughExport writes r as export writes it (header and sealed line) and
// reads it back as import reads it.
func throughExport(t *testing.T, r journal.Record) ([]importLine, error) {
	t.Helper()
	var buf bytes.Buffer
	jw := newJSONWriter(&buf)
	k := exportSealKey(testNS)
	if err := jw.write(exportHeader{Export: exportFormat, Seal: sealName, KeyID: k.id()}); err != nil {
		t.Fatal(err)
	}
	jw.flush()
	line, err := sealedLine(k, &r)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(line)
	recs, err := readExport(&buf, "test", testNS)
	return recs, err
}
