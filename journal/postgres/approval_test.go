package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// approvals makes three records through the store: one awaiting with one
// of two approvals given, one approved and run, one rejected by a
// resolution that names the input.
func approvals(t *testing.T, s *postgres.Store, clk *clock) []journal.Record {
	t.Helper()
	ctx := context.Background()
	var keys []uuid.UUID
	for i := range 3 {
		req := request(100+i, `{"n":1}`)
		req.Approvals, req.ApprovalTTL = 2, time.Hour
		if res, err := s.Begin(ctx, req); err != nil || res.Outcome != journal.Held {
			t.Fatalf("Begin(needs approval) = %v, %v; want Held", res.Outcome, err)
		}
		keys = append(keys, req.Key)
		clk.Advance(time.Second)
		for _, by := range []string{"alice", "bob"}[:1+i%2] {
			if _, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StatePending, By: by, Reason: "checked", Fingerprint: req.Fingerprint}); err != nil {
				t.Fatalf("approve %s by %s: %v", req.Key, by, err)
			}
		}
		clk.Advance(time.Second)
		switch i {
		case 1:
			res, err := s.Begin(ctx, req)
			if err != nil || res.Outcome != journal.TakenOver {
				t.Fatalf("Begin(approved) = %v, %v; want TakenOver", res.Outcome, err)
			}
			if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "a1", LeaseTTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`{"ok":1}`)}); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StateSuppressed, By: "carol", Reason: "no", Fingerprint: req.Fingerprint}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var recs []journal.Record
	for _, key := range keys {
		r, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if recs[0].State != journal.StateAwaiting || len(recs[1].Approval.Given) != 2 || len(recs[1].Attempts) != 1 ||
		recs[2].Resolution == nil || recs[2].Resolution.Fingerprint.IsZero() {
		t.Fatalf("records = %+v; want one awaiting, one approved and run, one rejected naming its input", recs)
	}
	return recs
}

// Records with approvals go out in the journal's JSON form and come back
// by Import, into another journal and into their own, unchanged: an
// identical record is taken, one whose approvals differ is not.
func TestApprovalExportImport(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	other := openStore(t, nil)
	recs := approvals(t, s, clk)
	var listed []journal.Record
	for r, err := range s.List(ctx, journal.Filter{State: journal.StateAwaiting}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, r)
	}
	if !reflect.DeepEqual(listed, recs[:1]) {
		t.Errorf("List(awaiting) = %+v; want %+v", listed, recs[:1])
	}
	for _, rec := range recs {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var back journal.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s) = %v", b, err)
		}
		for _, st := range []*postgres.Store{other, other, s} {
			if err := st.Import(ctx, back); err != nil {
				t.Errorf("Import(%s, %s) = %v", rec.Key, rec.State, err)
			}
		}
		if got, err := other.Get(ctx, rec.Key); err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("Get(imported %s) = %+v, %v; want %+v", rec.Key, got, err, rec)
		}
		back.Approval.Given = append(back.Approval.Given[:0:0], back.Approval.Given...)
		back.Approval.Given[0].Reason = "other"
		if err := other.Import(ctx, back); !errors.Is(err, journal.ErrExists) {
			t.Errorf("Import(%s with another approval) = %v; want ErrExists", rec.Key, err)
		}
	}
	// Past its TTL the record that awaited approval expires, as
	// journal.Expired says: GC removes it and it is counted so before.
	clk.Advance(recs[0].Expires.Sub(clk.Now()))
	if st := agree(t, "past the TTL", s); st.Expired != 1 || st.ByState[journal.StateAwaiting] != 1 {
		t.Errorf("Stats past the TTL = %+v; want the awaiting record expired", st)
	}
	if res, err := s.GC(ctx, journal.GCOptions{}); err != nil || res.Removed != 1 {
		t.Errorf("GC past the TTL = %+v, %v; want 1 removed", res, err)
	}
	if _, err := s.Get(ctx, recs[0].Key); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get(%s) after GC = %v; want ErrNotFound", recs[0].Key, err)
	}
	agree(t, "after GC", s)
}

// An approval changed behind the store, or one that does not read, is an
// error wrapping ErrCorrupt on every path that reads it: no Begin runs an
// intent, and no Resolve approves it, on a damaged approval.
func TestDamagedApprovalIsCorrupt(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize() + ".records"
	s := openIn(t, schema, &journal.Options{Now: clk.Now})
	recs := approvals(t, s, clk)
	where := func(i int) string { return ` WHERE key = '` + recs[i].Key.String() + `'` }
	psql(t, `UPDATE `+q+` SET approval = jsonb_set(approval, '{need}', '1')`+where(0),
		`UPDATE `+q+` SET res_fingerprint = NULL`+where(2))
	// Sealed, as a deliberate edit is, but not a record: a fingerprint of
	// one byte, no approval on an awaiting record.
	psql(t, `SET agentonce.seal = on`, `UPDATE `+q+` SET approval = jsonb_set(approval, '{given,0,fingerprint}', '"AA=="')`+where(1))
	damaged := map[uuid.UUID]string{recs[0].Key: "checksum", recs[1].Key: "approval 1 fingerprint", recs[2].Key: "checksum"}
	for i := range 3 {
		req := request(100+i, `{"n":1}`)
		named := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), req.Key.String()) || !strings.Contains(err.Error(), damaged[req.Key]) {
				t.Errorf("%s of damaged %s: error %v; want ErrCorrupt naming the key and the %s", what, req.Key, err, damaged[req.Key])
			}
		}
		_, err := s.Get(ctx, req.Key)
		named("Get", err)
		_, err = s.Begin(ctx, req)
		named("Begin", err)
		_, err = s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StatePending, By: "dave", Fingerprint: req.Fingerprint})
		named("Resolve", err)
	}
	psql(t, `SET agentonce.seal = on`, `UPDATE `+q+` SET approval = NULL`+where(0))
	if _, err := s.Get(ctx, recs[0].Key); !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), "awaiting") {
		t.Errorf("Get(awaiting with no approval) = %v; want ErrCorrupt", err)
	}
	n, err := s.Verify(ctx, func(uuid.UUID, error) {})
	if err != nil || n != 3 {
		t.Errorf("Verify = %d, %v; want 3 rows", n, err)
	}
}
