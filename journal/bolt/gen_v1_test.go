package bolt_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// TestWriteV1Journal wrote testdata/v1.journal and testdata/v1.json with
// the code of layout 1 (commit 8f5b039). Kept as the record of how.
func TestWriteV1Journal(t *testing.T) {
	if os.Getenv("AGENTONCE_WRITE_V1") == "" {
		t.Skip("writes testdata/v1.journal")
	}
	ns := uuid.MustParse("6f1d4f55-6a1b-4b8e-9a57-0c1a6d3e2b10")
	os.Remove("testdata/v1.journal")
	s, err := bolt.Open("testdata/v1.journal", &bolt.Options{Journal: journal.Options{Namespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown, journal.StatePending}
	tools := []string{"send_email", "charge_card", "create_ticket"}
	var recs []journal.Record
	for i := range 60 {
		in := keyderive.Intent{Tenant: fmt.Sprintf("tenant-%d", i%2), Session: fmt.Sprintf("sess-%d", i%5), Turn: fmt.Sprint(i % 7), Tool: tools[i%3]}
		st := states[i%5]
		created := base.Add(time.Duration(i) * time.Minute)
		ttl := 30 * 24 * time.Hour
		if i%4 == 0 {
			ttl = time.Hour // expired by the time anyone reads this file
		}
		r := journal.Record{
			Key: uuid.NewSHA1(ns, []byte(fmt.Sprint("v1-", i))), Intent: in,
			Fingerprint: sha256.Sum256([]byte(fmt.Sprint(i))), Effect: journal.Effect(i % 4),
			Input: []byte(fmt.Sprintf(`{"i":%d}`, i)), State: st,
			Attempts: []journal.Attempt{{ID: fmt.Sprintf("att-%d", i), Start: created, End: created.Add(time.Second), QuietAt: created.Add(2 * time.Second)}},
			Lease:    journal.Lease{Owner: "agent-1", Token: uint64(1 + i%3), Expires: created.Add(time.Minute)},
			Created:  created, Updated: created.Add(time.Second), Expires: created.Add(ttl),
		}
		switch st {
		case journal.StateSucceeded:
			r.Output = []byte(fmt.Sprintf(`{"ok":%d}`, i))
		case journal.StatePending:
			r.Attempts[0].End = time.Time{}
			r.Lease.Expires = base.Add(100 * 365 * 24 * time.Hour) // a live lease of a process that died
		default:
			r.ErrorClass, r.ErrorMessage = "class", fmt.Sprint("message ", i)
		}
		if i == 13 {
			r.Resolution = &journal.Resolution{State: journal.StateFailed, Reason: "checked", By: "ops", At: created.Add(time.Hour)}
			r.State = journal.StateFailed
		}
		if err := s.Import(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(context.Background(), r.Key)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(asGoRecords(recs), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/v1.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// asGoRecords is recs in encoding/json's default form, as testdata/v1.json
// holds them.
func asGoRecords(recs []journal.Record) []goRecord {
	out := make([]goRecord, len(recs))
	for i := range recs {
		out[i] = goRecord(recs[i])
	}
	return out
}
