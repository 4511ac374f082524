package bolt_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// A bbolt journal is held by one process at a time, so the leases found in
// it at open belong to a process that stopped: a restarted agent takes its
// intents over at once instead of waiting out an hour-long lease.
func TestReopenExpiresDeadLeases(t *testing.T) {
	for _, durable := range []bool{true, false} {
		name := map[bool]string{true: "durable", false: "non-durable"}[durable]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "j")
			st, err := bolt.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			key := uuid.New()
			req := journal.BeginRequest{
				Key:         key,
				Intent:      keyderive.Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "pay"},
				Fingerprint: keyderive.FingerprintOf([]byte(`{}`)),
				Owner:       "dead",
				AttemptID:   "a1",
				LeaseTTL:    time.Hour,
				Durable:     durable,
			}
			if res, err := st.Begin(ctx, req); err != nil || res.Outcome != journal.Started {
				t.Fatalf("Begin = %v, %v; want Started", res.Outcome, err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			// Inspection changes nothing, not even the dead lease.
			before := fileSum(t, path)
			ro, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ro.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Lease.Expires.After(time.Now().Add(50 * time.Minute)) {
				t.Fatalf("read-only open: lease expires %v; want it untouched", rec.Lease.Expires)
			}
			ro.Close()
			if fileSum(t, path) != before {
				t.Fatal("a read-only open changed the file")
			}

			st2, err := bolt.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			req.Owner, req.AttemptID = "restarted", "a2"
			res, err := st2.Begin(ctx, req)
			if err != nil || res.Outcome != journal.TakenOver {
				t.Fatalf("Begin after reopen = %v, %v; want TakenOver", res.Outcome, err)
			}
			if res.Record.Lease.Owner != "restarted" || res.Token <= 1 {
				t.Fatalf("lease after takeover = %+v, token %d", res.Record.Lease, res.Token)
			}
		})
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
