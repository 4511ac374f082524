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

// A settled record with a zero Expires (written before the field was kept;
// Import refuses one) records no TTL. Begin answers it, as
// a re-issue of it does (reissue.Of, agentctl replay): running the
// intent again on a guess about its age could repeat its effect. GC keeps
// it.
func TestZeroExpiresIsAnswered(t *testing.T) {
	stores := map[string]func(*testing.T) journal.Store{
		"bolt": func(t *testing.T) journal.Store {
			s, err := bolt.Open(filepath.Join(t.TempDir(), "journal.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	states := []struct {
		st    journal.State
		class string
	}{
		{journal.StateSucceeded, ""},
		{journal.StateFailed, "terminal"},
		{journal.StateSuppressed, "mismatch"},
	}
	for name, open := range stores {
		for _, tc := range states {
			t.Run(name+"/"+tc.st.String(), func(t *testing.T) {
				ctx := context.Background()
				s := open(t)
				defer s.Close()
				now := time.Now().UTC().Truncate(time.Millisecond)
				in := keyderive.Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "pay"}
				rec := journal.Record{
					Version: journal.SchemaVersion, Key: uuid.New(), Intent: in, Effect: journal.Unkeyed,
					State: tc.st, ErrorClass: tc.class, Output: []byte(`{"paid":1}`),
					Lease:   journal.Lease{Owner: "old", Token: 3},
					Created: now.Add(-time.Hour), Updated: now.Add(-time.Hour),
					Attempts: []journal.Attempt{{ID: "a1", Start: now.Add(-time.Hour), End: now.Add(-time.Hour), Class: tc.class}},
				}
				if tc.st == journal.StateSucceeded {
					rec.Attempts[0].Class = "success"
				} else {
					rec.Output = nil
				}
				// Import refuses a record with no expiry (the state machine
				// never writes one), so it is put as an older version left it.
				if err := bolt.BulkPut(s.(*bolt.Store), []journal.Record{rec}); err != nil {
					t.Fatalf("BulkPut: %v", err)
				}
				res, err := s.Begin(ctx, journal.BeginRequest{Key: rec.Key, Intent: in, Effect: journal.Unkeyed, Owner: "new", AttemptID: "a2"})
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				if res.Outcome != journal.Answered {
					t.Fatalf("Begin of a %s record with a zero Expires = %v; want Answered (no TTL recorded: never run again on a guess)", tc.st, res.Outcome)
				}
				if _, err := s.GC(ctx, journal.GCOptions{}); err != nil {
					t.Fatalf("GC: %v", err)
				}
				got, err := s.Get(ctx, rec.Key)
				if err != nil {
					t.Fatalf("Get after Begin and GC: %v; want the record kept", err)
				}
				if got.State != tc.st || got.Lease.Token != 3 {
					t.Fatalf("Get = %s token %d; want %s token 3, untouched", got.State, got.Lease.Token, tc.st)
				}
			})
		}
	}
}
