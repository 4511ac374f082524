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

func beginReq(key uuid.UUID) journal.BeginRequest {
	input := []byte(`{"n":1}`)
	return journal.BeginRequest{
		Key:         key,
		Intent:      keyderive.Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "charge"},
		Fingerprint: keyderive.FingerprintOf(input),
		Effect:      journal.Keyed,
		Input:       input,
		Owner:       "test",
		AttemptID:   "a1",
		LeaseTTL:    time.Minute,
		Guard:       journal.GuardTurn,
	}
}

// A new intent's Begin reads the record and asks the guard in one read
// transaction when no other call holds its key's lock (it read in two
// before: once without the lock, once with it).
func TestBeginNewIntentReadsOnce(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for i := range 20 { // past the fresh bucket's sixteen: the guard reads the index too
		req := beginReq(uuid.New())
		req.Intent.Turn = string(rune('a' + i))
		before := bolt.ReadTxs(s)
		res, err := s.Begin(ctx, req)
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("Begin = %v, %v", res.Outcome, err)
		}
		if n := bolt.ReadTxs(s) - before; n != 1 {
			t.Fatalf("Begin of a new intent began %d read transactions; want 1", n)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`"ok"`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// A re-issue of a settled intent is answered whether its key's lock is
// free (the read under the lock) or held by another call (the read
// without it, which does not wait for the lock).
func TestBeginReplayBusyStripe(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	req := beginReq(uuid.New())
	res, err := s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin = %v, %v", res.Outcome, err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	check := func(how string) {
		t.Helper()
		r, err := s.Begin(ctx, req)
		if err != nil || r.Outcome != journal.Answered || r.Record.State != journal.StateSucceeded || string(r.Record.Output) != `"ok"` {
			t.Fatalf("%s: Begin = %v (%v, %q), %v; want answered", how, r.Outcome, r.Record.State, r.Record.Output, err)
		}
	}
	check("lock free")
	release := bolt.HoldStripe(s, req.Key)
	check("lock held") // would block here, were the lock waited for
	release()
	check("lock free again")
}

func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
