package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// A durable write of a key that a non-durable Begin found in neither the
// overlay nor the file does not read the file for the record it replaces
// (overlaid.unfiled). Every way the file can hold a record of such a key
// by then is tried here, and after each the indexes must be those the
// records give and the counters must agree with a count of the records:
// a write that took a filed key for a new one would leave the old entries
// behind and count the record twice.
func TestUnfiledWriteAheads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	opts := &bolt.Options{Journal: journal.Options{Now: func() time.Time { return now }}}
	s := mustOpen(t, path, opts)
	defer func() { s.Close() }()
	ctx := context.Background()
	req := func(key uuid.UUID, owner string, durable bool) journal.BeginRequest {
		return journal.BeginRequest{Key: key, Intent: keyderive.Intent{Tenant: "t", Session: "s", Turn: key.String(), Tool: "pay"},
			Owner: owner, AttemptID: "a", Durable: durable, LeaseTTL: time.Minute, RecordTTL: time.Hour}
	}
	begin := func(r journal.BeginRequest, want journal.BeginOutcome) journal.BeginResult {
		t.Helper()
		res, err := s.Begin(ctx, r)
		if err != nil || res.Outcome != want {
			t.Fatalf("Begin(%s) = %v, %v; want %v", r.Key, res.Outcome, err, want)
		}
		return res
	}
	complete := func(key uuid.UUID, token uint64) {
		t.Helper()
		if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: token, State: journal.StateSucceeded, Output: []byte(`1`)}); err != nil {
			t.Fatalf("Complete(%s): %v", key, err)
		}
	}
	check := func(stage string) {
		t.Helper()
		if d := bolt.IndexMismatch(s); d != "" {
			t.Fatalf("%s: %s", stage, d)
		}
		agree(t, stage, s, now)
	}

	// A new key.
	k := uuid.New()
	complete(k, begin(req(k, "o1", false), journal.Started).Token)
	check("new key")

	// A key whose settled record expired in the file: Begin starts it
	// anew, and its outcome replaces the expired record.
	expired := uuid.New()
	r := req(expired, "o1", true)
	r.RecordTTL = time.Minute
	complete(expired, begin(r, journal.Started).Token)
	now = now.Add(2 * time.Minute)
	complete(expired, begin(req(expired, "o1", false), journal.Started).Token)
	check("over an expired record")

	// Taken over in the overlay, renewed, another attempt, then completed.
	taken := uuid.New()
	begin(req(taken, "o1", false), journal.Started)
	now = now.Add(2 * time.Minute)
	res := begin(req(taken, "o2", false), journal.TakenOver)
	if _, err := s.Renew(ctx, journal.RenewRequest{Key: taken, Token: res.Token, LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: taken, Token: res.Token, ID: "b", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	complete(taken, res.Token)
	check("taken over, renewed, attempted")

	// Begun durably (on file), then a non-durable attempt: the overlay's
	// record has a filed one under it.
	filed := uuid.New()
	res = begin(req(filed, "o1", true), journal.Started)
	if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: filed, Token: res.Token, ID: "b", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	complete(filed, res.Token)
	check("filed, then an attempt in the overlay")

	// Settled by CompleteWith (on file, out of the overlay), then retaken:
	// the retake's durable write replaces the filed record.
	retaken := uuid.New()
	res = begin(req(retaken, "o1", false), journal.Started)
	if _, err := s.CompleteWith(ctx, retaken, res.Token, func(context.Context) ([]byte, error) { return []byte(`2`), nil }); err != nil {
		t.Fatal(err)
	}
	r = req(retaken, "o1", false)
	r.Retake = func(*journal.Record) bool { return true }
	complete(retaken, begin(r, journal.TakenOver).Token)
	check("completed in a transaction, then retaken")

	// Written to the file by Close, taken over after the reopen.
	closed := uuid.New()
	begin(req(closed, "o1", false), journal.Started)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second) // the reopen ends the stopped owner's lease
	s = mustOpen(t, path, opts)
	complete(closed, begin(req(closed, "o2", false), journal.TakenOver).Token)
	check("persisted by Close, completed after the reopen")

	// And enough new keys to move them all from the fresh bucket into the
	// index, each completed over a write-ahead of its own.
	for range 20 {
		k := uuid.New()
		complete(k, begin(req(k, "o1", false), journal.Started).Token)
	}
	check("flushed")
}
