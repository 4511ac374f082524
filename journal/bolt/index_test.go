package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/internal/machine"
	"github.com/agentonce/agentonce/keyderive"
)

// agree checks every query the indexes answer against a pass over all the
// records: Stats against ScanStats, List (by session, state, tool, time
// range) against a filter of every record, GC's dry run against Expired.
func agree(t *testing.T, stage string, s *bolt.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("%s: Stats: %v", stage, err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil {
		t.Fatalf("%s: ScanStats: %v", stage, err)
	}
	if fmt.Sprint(st) != fmt.Sprint(scan) {
		t.Fatalf("%s: Stats = %+v; ScanStats = %+v", stage, st, scan)
	}
	var all []journal.Record
	for r, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			t.Fatalf("%s: List: %v", stage, err)
		}
		all = append(all, r)
	}
	if !slices.IsSortedFunc(all, func(a, b journal.Record) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return slices.Compare(b.Key[:], a.Key[:])
	}) {
		t.Fatalf("%s: List() is not newest first", stage)
	}
	if len(all) != st.Records {
		t.Fatalf("%s: List() = %d records; Stats says %d", stage, len(all), st.Records)
	}
	expired, overdue := 0, 0
	for _, r := range all {
		if journal.Expired(&r, now) {
			expired++
		}
		if machine.Overdue(&r, now) {
			overdue++
		}
	}
	if res, err := s.GC(ctx, journal.GCOptions{DryRun: true}); err != nil || res.Removed != expired || res.KeptUnknown != overdue {
		t.Fatalf("%s: GC(dry run) = %+v, %v; want %d removed, %d kept", stage, res, err, expired, overdue)
	}
	var filters []journal.Filter
	for i := range 4 {
		filters = append(filters, journal.Filter{Session: fmt.Sprint("s", i)}, journal.Filter{Session: fmt.Sprint("s", i), Tenant: "t1"})
	}
	for st := journal.StatePending; st <= journal.StateUnknown; st++ {
		filters = append(filters, journal.Filter{State: st})
	}
	if len(all) > 4 {
		filters = append(filters, journal.Filter{Tool: "pay", Limit: 5},
			journal.Filter{Since: all[len(all)-1].Created.Add(time.Nanosecond), Until: all[2].Created})
	}
	for _, f := range filters {
		got := listKeys(t, s, f)
		var want []uuid.UUID
		for _, r := range all {
			if (f.Tenant == "" || r.Intent.Tenant == f.Tenant) && (f.Session == "" || r.Intent.Session == f.Session) &&
				(f.State == 0 || r.State == f.State) && (f.Tool == "" || r.Intent.Tool == f.Tool) &&
				(f.Since.IsZero() || !r.Created.Before(f.Since)) && (f.Until.IsZero() || r.Created.Before(f.Until)) {
				want = append(want, r.Key)
			}
		}
		if f.Limit > 0 && len(want) > f.Limit {
			want = want[:f.Limit]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: List(%+v) = %v; want %v", stage, f, got, want)
		}
	}
}

// Random calls through the store (new intents durable and not, attempts,
// every outcome, resolutions, retakes, mismatches, GC, imports, reopening)
// keep the indexes and counters in the file equal to what the records say.
func TestIndexesFollowTheRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	path := filepath.Join(t.TempDir(), "j")
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	defer func() { s.Close() }()
	ctx := context.Background()
	type open struct {
		key   uuid.UUID
		token uint64
	}
	var pending []open
	var settled []journal.Record
	tools := []string{"pay", "mail", "ship"}
	states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown}
	for step := range 1500 {
		now = now.Add(time.Duration(rng.IntN(int(time.Hour))))
		switch op := rng.IntN(20); {
		case op < 7 || len(pending) == 0:
			req := journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: "a1", Durable: rng.IntN(2) == 0,
				Intent:    keyderive.Intent{Tenant: fmt.Sprint("t", rng.IntN(2)), Session: fmt.Sprint("s", rng.IntN(4)), Turn: fmt.Sprint(rng.IntN(3)), Tool: tools[rng.IntN(3)]},
				RecordTTL: time.Duration(1+rng.IntN(72)) * time.Hour, Guard: journal.GuardOff}
			res, err := s.Begin(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == journal.Started {
				pending = append(pending, open{req.Key, res.Token})
			}
		case op < 14:
			i := rng.IntN(len(pending))
			p := pending[i]
			pending = slices.Delete(pending, i, i+1)
			if rng.IntN(3) == 0 {
				err := s.StartAttempt(ctx, journal.AttemptRequest{Key: p.key, Token: p.token, ID: "a2", Durable: rng.IntN(2) == 0})
				if err != nil && !errors.Is(err, journal.ErrFenced) {
					t.Fatal(err)
				}
			}
			r, err := s.Complete(ctx, journal.Completion{Key: p.key, Token: p.token, State: states[rng.IntN(len(states))], ErrorClass: "c"})
			if errors.Is(err, journal.ErrFenced) {
				continue // taken over since
			}
			if err != nil {
				t.Fatal(err)
			}
			settled = append(settled, r)
		case op < 16 && len(settled) > 0:
			r := settled[rng.IntN(len(settled))]
			if r.State == journal.StateUnknown {
				if _, err := s.Resolve(ctx, r.Key, journal.Resolution{State: journal.StateFailed, Reason: "r"}); err != nil && !errors.Is(err, journal.ErrNotResolvable) && !errors.Is(err, journal.ErrNotFound) {
					t.Fatal(err)
				}
			} else {
				req := journal.BeginRequest{Key: r.Key, Intent: r.Intent, Owner: "o2", AttemptID: "a9", Retake: func(*journal.Record) bool { return true }}
				res, err := s.Begin(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome == journal.TakenOver || res.Outcome == journal.Started {
					pending = append(pending, open{r.Key, res.Token})
				}
			}
		case op < 17:
			if _, err := s.GC(ctx, journal.GCOptions{}); err != nil {
				t.Fatal(err)
			}
		case op < 18:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
			pending = nil // the reopen ended their leases
		default:
			r := journal.Record{Key: uuid.New(), Intent: keyderive.Intent{Session: "s1", Tool: "mail"}, State: journal.StateSucceeded,
				Attempts: []journal.Attempt{{ID: "a1", Start: now.Add(-time.Hour), End: now}}, Lease: journal.Lease{Token: 1, Expires: now},
				Created: now.Add(-time.Hour), Updated: now, Expires: now.Add(time.Hour)}
			if err := s.Import(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if step%50 == 0 {
			agree(t, fmt.Sprint("step ", step), s, now)
		}
	}
	agree(t, "end", s, now)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if err := bolt.Compact(ctx, path, cp, nil); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, cp, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: clock}})
	defer c.Close()
	if bolt.Legacy(c) {
		t.Fatal("Compact left the copy without its indexes")
	}
	agree(t, "compacted copy", c, now)
}
