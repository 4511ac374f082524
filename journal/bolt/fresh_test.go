package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// Records not yet moved from the fresh bucket into the index answer every
// query as indexed ones do: the guard, List, Stats, GC (dry run and real),
// and the lease ending of a reopen. And a new record's commit writes no
// index page until the fresh bucket is full.
func TestFreshRecordsAnswerEveryQuery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	defer func() { s.Close() }()
	ctx := context.Background()
	in := func(session, turn string) keyderive.Intent {
		return keyderive.Intent{Tenant: "t", Session: session, Turn: turn, Tool: "pay"}
	}
	begin := func(key uuid.UUID, intent keyderive.Intent, durable bool, ttl time.Duration) journal.BeginResult {
		t.Helper()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Intent: intent, Owner: "o", AttemptID: "a1",
			Durable: durable, RecordTTL: ttl, LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	settle := func(intent keyderive.Intent, st journal.State, ttl time.Duration) uuid.UUID {
		t.Helper()
		key := uuid.New()
		res := begin(key, intent, false, ttl)
		if res.Outcome != journal.Started {
			t.Fatalf("Begin(%v) = %v", intent, res.Outcome)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: st, ErrorClass: "c"}); err != nil {
			t.Fatal(err)
		}
		return key
	}

	root := bolt.IndexRoot(s)
	expiring := settle(in("s1", "1"), journal.StateSucceeded, time.Minute)
	settle(in("s1", "2"), journal.StateSucceeded, time.Hour)
	settle(in("s2", "1"), journal.StateSuppressed, time.Hour)
	settle(in("s2", "2"), journal.StateUnknown, time.Minute)
	pending := uuid.New()
	if res := begin(pending, in("s3", "1"), true, time.Hour); res.Outcome != journal.Started {
		t.Fatalf("Begin = %v", res.Outcome)
	}
	if got := bolt.FreshKeys(s); got != 5 {
		t.Fatalf("fresh bucket holds %d records; want the 5 written", got)
	}
	if bolt.IndexRoot(s) != root {
		t.Fatal("a new record's commit wrote the index before the fresh bucket was full")
	}
	now = now.Add(2 * time.Minute) // one expired, one unknown overdue
	agree(t, "fresh only", s, now)

	// The suppression in s2 turn 1 blocks another input of the tool there;
	// so does one that a fresh pending record became (an Unkeyed tool's
	// durable write-ahead, then its outcome).
	if res := begin(uuid.New(), in("s2", "1"), false, time.Hour); res.Outcome != journal.Guarded {
		t.Fatalf("Begin beside a fresh suppression = %v; want Guarded", res.Outcome)
	}
	later := uuid.New()
	lr := begin(later, in("s5", "1"), true, time.Hour)
	if _, err := s.Complete(ctx, journal.Completion{Key: later, Token: lr.Token, State: journal.StateSuppressed, ErrorClass: "c"}); err != nil {
		t.Fatal(err)
	}
	if res := begin(uuid.New(), in("s5", "1"), false, time.Hour); res.Outcome != journal.Guarded {
		t.Fatalf("Begin beside a fresh record suppressed after its write-ahead = %v; want Guarded", res.Outcome)
	}

	// A reopen ends the lease of the fresh pending record: a new owner
	// takes it over at once.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	if res := begin(pending, in("s3", "1"), true, time.Hour); res.Outcome != journal.TakenOver {
		t.Fatalf("Begin after a reopen = %v; want TakenOver (the stopped owner's lease ended)", res.Outcome)
	}

	// GC removes the fresh expired record, and its fresh key with it.
	res, err := s.GC(ctx, journal.GCOptions{})
	if err != nil || res.Removed != 1 || res.KeptUnknown != 1 {
		t.Fatalf("GC = %+v, %v; want 1 removed, 1 unknown kept", res, err)
	}
	if _, err := s.Get(ctx, expiring); err == nil {
		t.Fatal("GC left the expired fresh record")
	}
	if got := bolt.FreshKeys(s); got != 5 {
		t.Fatalf("fresh bucket holds %d records after GC; want 5", got)
	}
	agree(t, "after GC", s, now)

	// Filling the fresh bucket moves its records into the index.
	for i := bolt.FreshKeys(s); i < bolt.FreshMax; i++ {
		settle(in("s4", "1"), journal.StateSucceeded, time.Hour)
	}
	if got := bolt.FreshKeys(s); got != 0 {
		t.Fatalf("fresh bucket holds %d records after it filled; want 0", got)
	}
	if bolt.IndexRoot(s) == root {
		t.Fatal("the flush wrote no index entry")
	}
	agree(t, "flushed", s, now)
	if res := begin(uuid.New(), in("s2", "1"), false, time.Hour); res.Outcome != journal.Guarded {
		t.Fatalf("Begin beside an indexed suppression = %v; want Guarded", res.Outcome)
	}
}

// A damaged record among the fresh ones fails only the queries that must
// read it: Stats reads none, new writes go on (the flush leaves it where
// it is rather than fail the write that fills the bucket), and List of
// another session does not read it.
func TestDamagedFreshRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	damaged := settle(t, s, `{"sent":true}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	editRaw(t, path, damaged.Key, flipOutput(t))

	s = mustOpen(t, path, nil)
	defer s.Close()
	ctx := context.Background()
	other := keyderive.Intent{Tenant: "t", Session: "elsewhere", Turn: "1", Tool: "pay"}
	var written []uuid.UUID
	for range 2*bolt.FreshMax + 3 {
		req := journal.BeginRequest{Key: uuid.New(), Intent: other, Owner: "o", AttemptID: "a1"}
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatalf("Begin beside a damaged fresh record: %v", err)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
			t.Fatalf("Complete beside a damaged fresh record (a flush): %v", err)
		}
		written = append(written, req.Key)
	}
	if _, err := s.Get(ctx, damaged.Key); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Get(damaged) error %v; want ErrCorrupt", err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Records != len(written)+1 {
		t.Fatalf("Stats = %d records, %v; want %d and no error (Stats reads no record)", st.Records, err, len(written)+1)
	}
	if got := listKeys(t, s, journal.Filter{Session: "elsewhere"}); len(got) != len(written) {
		t.Fatalf("List(other session) = %d records; want %d", len(got), len(written))
	}
	var listErr error
	for _, err := range s.List(ctx, journal.Filter{Session: damaged.Intent.Session}) {
		if err != nil {
			listErr = err
			break
		}
	}
	if !errors.Is(listErr, journal.ErrCorrupt) || !strings.Contains(listErr.Error(), damaged.Key.String()) {
		t.Fatalf("List(the damaged record's session) error %v; want ErrCorrupt naming %s", listErr, damaged.Key)
	}
}

// Writers in parallel (their writes group-committed, the fresh bucket
// filling and flushing inside shared transactions), beside readers and a
// GC loop, leave the indexes, the fresh bucket and the counters agreeing
// with the records.
func TestFreshUnderConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	var mu sync.Mutex
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	ticking := true // each reading a second later, until the writers are done
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if ticking {
			now = now.Add(time.Second)
		}
		return now
	}
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	defer s.Close()
	ctx := context.Background()
	states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown}
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	for w := range 8 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 150 {
				in := keyderive.Intent{Tenant: "t", Session: fmt.Sprint("s", (w+i)%5), Turn: fmt.Sprint(i), Tool: "pay"}
				req := journal.BeginRequest{Key: uuid.New(), Intent: in, Owner: "o", AttemptID: "a1",
					Durable: i%3 == 0, RecordTTL: time.Duration(1+i%40) * time.Second, Guard: journal.GuardOff}
				res, err := s.Begin(ctx, req)
				if err != nil {
					t.Error(err)
					return
				}
				if i%7 == 0 {
					continue // left pending
				}
				if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: states[(w+i)%len(states)], ErrorClass: "c"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.GCBatch(ctx, 8); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Stats(ctx); err != nil {
				t.Error(err)
				return
			}
			for _, err := range s.List(ctx, journal.Filter{Session: "s1"}) {
				if err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	writers.Wait()
	close(stop)
	readers.Wait()
	mu.Lock()
	ticking = false
	at := now
	mu.Unlock()
	agree(t, "after the writers", s, at)
}

// The flush makes the index entries of the records it moves from their
// fresh entries (reading only the suppressed records, for their guard
// entries): the index it leaves must be the one the records give, for
// records of every state, several sessions and several tools, and the
// guard, which first asks whether the tool may have a suppressed record
// (maySuppress), must still find each suppression, fresh or indexed.
func TestFlushIndexesWhatTheRecordsGive(t *testing.T) {
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	s := mustOpen(t, filepath.Join(t.TempDir(), "j"), &bolt.Options{Journal: journal.Options{Now: func() time.Time { return now }}})
	defer s.Close()
	ctx := context.Background()
	states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown, journal.StatePending}
	var suppressed []keyderive.Intent
	for i := range 5*bolt.FreshMax + 3 {
		in := keyderive.Intent{Tenant: "t", Session: fmt.Sprintf("s%d", i%3), Turn: fmt.Sprint(i), Tool: []string{"pay", "mail"}[i%2]}
		st := states[i%len(states)]
		key := uuid.New()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Intent: in, Owner: "o", AttemptID: "a1",
			Durable: st == journal.StatePending, RecordTTL: time.Duration(i+1) * time.Minute, LeaseTTL: time.Hour})
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("Begin %d = %v, %v", i, res.Outcome, err)
		}
		if st != journal.StatePending {
			if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: st, ErrorClass: "c"}); err != nil {
				t.Fatal(err)
			}
		}
		if st == journal.StateSuppressed {
			suppressed = append(suppressed, in)
		}
		if d := bolt.IndexMismatch(s); d != "" {
			t.Fatalf("after record %d (%v, %d fresh): %s", i, st, bolt.FreshKeys(s), d)
		}
		for _, g := range suppressed {
			res, err := s.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Intent: g, Owner: "o", AttemptID: "a1", Guard: journal.GuardTurn, LeaseTTL: time.Hour})
			if err != nil || res.Outcome != journal.Guarded {
				t.Fatalf("after record %d: Begin beside the suppression of %v = %v, %v; want Guarded", i, g, res.Outcome, err)
			}
		}
	}
	agree(t, "flushed", s, now)
	other := keyderive.Intent{Tenant: "t", Session: suppressed[0].Session, Turn: suppressed[0].Turn, Tool: "elsewhere"}
	res, err := s.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Intent: other, Owner: "o", AttemptID: "a1", Guard: journal.GuardTurn, LeaseTTL: time.Hour})
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin of a tool without a suppression = %v, %v; want Started", res.Outcome, err)
	}
}
