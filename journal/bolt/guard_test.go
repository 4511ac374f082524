package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// The guard's "may this tool have a suppressed record" is answered from
// memory (maySuppress): a suppression that an earlier process wrote, found
// in the counters at open, blocks a Begin after the reopen, and so does
// one whose counter no longer decodes; a tool without one is not blocked.
func TestGuardKnowsSuppressionsAtOpen(t *testing.T) {
	ctx := context.Background()
	in := func(tool string) keyderive.Intent {
		return keyderive.Intent{Tenant: "t", Session: "s1", Turn: "1", Tool: tool}
	}
	begin := func(s *bolt.Store, intent keyderive.Intent, fp byte) journal.BeginResult {
		t.Helper()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Intent: intent, Owner: "o", AttemptID: "a1",
			Fingerprint: keyderive.Fingerprint{fp}, Guard: journal.GuardTurn, LeaseTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, tc := range []struct {
		name    string
		damage  bool // the counters of the suppressed tool no longer decode
		flushed bool // enough records after it that it left the fresh bucket
	}{
		{name: "fresh"},
		{name: "indexed", flushed: true},
		{name: "counter damaged", damage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			s := mustOpen(t, path, nil)
			res := begin(s, in("pay"), 1)
			if _, err := s.Complete(ctx, journal.Completion{Key: res.Record.Key, Token: res.Token, State: journal.StateSuppressed, ErrorClass: "c"}); err != nil {
				t.Fatal(err)
			}
			if tc.flushed {
				for i := range 20 {
					r := begin(s, keyderive.Intent{Tenant: "t", Session: "s2", Turn: string(rune('a' + i)), Tool: "look"}, 1)
					if _, err := s.Complete(ctx, journal.Completion{Key: r.Record.Key, Token: r.Token, State: journal.StateSucceeded}); err != nil {
						t.Fatal(err)
					}
				}
				if n := bolt.FreshKeys(s); n >= 16 {
					t.Fatalf("%d fresh keys; want the suppression moved to the index", n)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.damage {
				db, err := bbolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("counts")).Put([]byte("tpay"), []byte{0xff}) })
				if cerr := db.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			s = mustOpen(t, path, nil)
			defer s.Close()
			if got := begin(s, in("pay"), 2); got.Outcome != journal.Guarded {
				t.Fatalf("Begin of pay beside an earlier process's suppression = %v; want Guarded", got.Outcome)
			}
			if got := begin(s, in("refund"), 2); got.Outcome != journal.Started {
				t.Fatalf("Begin of refund, which has no suppression = %v; want Started", got.Outcome)
			}
		})
	}
}
