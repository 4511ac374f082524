package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// version orders the records a key has had: a record created later (after
// GC removed the last), or a later write of the same record (a higher
// fencing token, or the same one and a later update).
type version struct {
	created int64
	token   uint64
	updated int64
}

func versionOf(r *journal.Record) version {
	return version{r.Created.UnixNano(), r.Lease.Token, r.Updated.UnixNano()}
}

func (v version) before(w version) bool {
	if v.created != w.created {
		return v.created < w.created
	}
	return v.token < w.token || v.token == w.token && v.updated < w.updated
}

// TestCacheCoherent hammers a few keys, some on one stripe, with every
// kind of write (Begin durable and not, Complete, Retake, takeover after a
// lease ran out, Resolve, GC of expired records) while readers Get them.
// A Get never goes back to an older record than one it saw, a writer's Get
// sees its own write or a later one, and once it is over every key's Get
// is what the file holds.
func TestCacheCoherent(t *testing.T) {
	clk := &journaltest.Clock{}
	s := mustOpen(t, filepath.Join(t.TempDir(), "j.db"), &bolt.Options{Journal: journal.Options{Now: clk.Now, Monotonic: clk.Monotonic}})
	defer s.Close()
	ctx := context.Background()

	var keys []uuid.UUID
	for i := range 6 {
		k := uuid.New()
		if i < 3 {
			k[0] = 0x42 // three keys on one stripe
		}
		keys = append(keys, k)
	}
	// fingerprints: one payload per key, so that no Begin is a mismatch.
	req := func(k uuid.UUID, owner string, r *rand.Rand) journal.BeginRequest {
		return journal.BeginRequest{
			Key:         k,
			Intent:      keyderive.Intent{Tenant: "acme", Session: "s", Turn: "1", Tool: "charge"},
			Fingerprint: keyderive.Fingerprint{k[15]},
			Owner:       owner,
			LeaseTTL:    time.Minute,
			RecordTTL:   time.Hour,
			Durable:     r.IntN(4) != 0,
			Retake:      func(*journal.Record) bool { return r.IntN(3) == 0 },
		}
	}
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		failed  atomic.Bool
		writes  atomic.Int64
		errMu   sync.Mutex
		errList []string
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errList) < 10 {
			errList = append(errList, fmt.Sprintf(format, args...))
		}
		failed.Store(true)
	}
	// seen checks that a writer's Get after its write is not older.
	seen := func(k uuid.UUID, wrote journal.Record) {
		got, err := s.Get(ctx, k)
		switch {
		case errors.Is(err, journal.ErrNotFound):
			if !journal.Expired(&wrote, clk.Now()) {
				fail("key %s: Get after a write of a live record: not found", k)
			}
		case err != nil:
			fail("key %s: Get: %v", k, err)
		case versionOf(&got).before(versionOf(&wrote)):
			fail("key %s: Get after a write = %+v, older than the write %+v", k, versionOf(&got), versionOf(&wrote))
		}
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			owner := fmt.Sprintf("writer-%d", w)
			for i := 0; i < 400 && !failed.Load(); i++ {
				k := keys[r.IntN(len(keys))]
				res, err := s.Begin(ctx, req(k, owner, r))
				if err != nil {
					fail("Begin: %v", err)
					return
				}
				switch res.Outcome {
				case journal.Started, journal.TakenOver:
					seen(k, res.Record)
					if r.IntN(5) == 0 {
						continue // left pending: a later Begin takes it over once its lease ends
					}
					states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateUnknown}
					c := journal.Completion{Key: k, Token: res.Token, State: states[r.IntN(len(states))],
						Output: fmt.Appendf(nil, `{"n":%d}`, writes.Add(1))}
					if c.State != journal.StateSucceeded {
						c.Output, c.ErrorClass, c.ErrorMessage = nil, "timeout", "after send"
					}
					done, err := s.Complete(ctx, c)
					if errors.Is(err, journal.ErrFenced) {
						continue // taken over meanwhile
					}
					if err != nil {
						fail("Complete: %v", err)
						return
					}
					seen(k, done)
					if done.State == journal.StateUnknown && r.IntN(2) == 0 {
						rec, err := s.Resolve(ctx, k, journal.Resolution{State: journal.StateSucceeded, By: owner, Reason: "checked"})
						if err == nil {
							seen(k, rec)
						} else if !errors.Is(err, journal.ErrNotResolvable) && !errors.Is(err, journal.ErrNotFound) {
							fail("Resolve: %v", err)
						}
					}
				case journal.Held:
					clk.Advance(30 * time.Second) // leases run out now and then
				}
			}
		}()
	}
	// GC: records expire as the clock moves, and are removed.
	var others sync.WaitGroup
	others.Add(1)
	go func() {
		defer others.Done()
		for !stop.Load() && !failed.Load() {
			clk.Advance(7 * time.Minute)
			if _, err := s.GCBatch(ctx, 0); err != nil {
				fail("GC: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// Readers: each key's record only moves forward, or goes (GC).
	for g := range 2 {
		others.Add(1)
		go func() {
			defer others.Done()
			last := map[uuid.UUID]version{}
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for !stop.Load() && !failed.Load() {
				k := keys[r.IntN(len(keys))]
				got, err := s.Get(ctx, k)
				if errors.Is(err, journal.ErrNotFound) {
					delete(last, k) // removed by GC; a new record may follow
					continue
				}
				if err != nil {
					fail("Get: %v", err)
					return
				}
				v := versionOf(&got)
				if prev, ok := last[k]; ok && v.before(prev) {
					fail("key %s: Get went back from %+v to %+v (%s)", k, prev, v, got.State)
				}
				last[k] = v
			}
		}()
	}
	// The writers end, then GC and the readers.
	wg.Wait()
	stop.Store(true)
	others.Wait()
	if failed.Load() {
		t.Fatalf("%d+ failures, first: %v", len(errList), errList)
	}
	if writes.Load() == 0 {
		t.Fatal("no outcome was written")
	}
	hits := 0
	for _, k := range keys {
		got, gerr := s.Get(ctx, k)
		file, found, err := bolt.FileRecord(s, k)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			if !errors.Is(gerr, journal.ErrNotFound) {
				t.Errorf("key %s: the file has no record; Get = %+v, %v", k, versionOf(&got), gerr)
			}
			continue
		}
		if bolt.Cached(s, k) {
			hits++
		}
		if gerr != nil || !reflect.DeepEqual(got, file) {
			t.Errorf("key %s: Get = %+v %s, %v; the file has %+v %s", k, versionOf(&got), got.State, gerr, versionOf(&file), file.State)
		}
	}
	t.Logf("%d outcomes written; %d keys' records cached at the end", writes.Load(), hits)
}

// TestCacheFillRace: a Get that read a record from the file just before a
// write replaced it must not leave the older record in the cache once the
// write is over. The hook runs a Retake between the Get's read and its
// fill.
func TestCacheFillRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	ctx := context.Background()
	s := mustOpen(t, path, nil)
	req := journal.BeginRequest{Key: uuid.New(), Intent: keyderive.Intent{Tenant: "acme", Session: "s", Turn: "1", Tool: "charge"},
		Fingerprint: keyderive.Fingerprint{1}, Owner: "a", LeaseTTL: time.Minute, Durable: true}
	res, err := s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin = %v, %v", res.Outcome, err)
	}
	first, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateUnknown, ErrorClass: "timeout"})
	if err != nil {
		t.Fatal(err)
	}
	// Reopened: the cache is empty, so the next Get reads the file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, nil)
	defer s.Close()
	if bolt.Cached(s, req.Key) {
		t.Fatal("cached after a reopen")
	}
	// A first miss does not fill; the second, below, does.
	if _, err := s.Get(ctx, req.Key); err != nil || bolt.Cached(s, req.Key) {
		t.Fatalf("Get after a reopen: %v; cached %v, want not yet", err, bolt.Cached(s, req.Key))
	}
	retake := req
	retake.Owner = "b"
	retake.Retake = func(*journal.Record) bool { return true }
	var retaken journal.BeginResult
	bolt.SetReadHook(func(key uuid.UUID) {
		bolt.SetReadHook(nil)
		if retaken, err = s.Begin(ctx, retake); err != nil || retaken.Outcome != journal.TakenOver {
			t.Errorf("Retake = %v, %v", retaken.Outcome, err)
		}
	})
	defer bolt.SetReadHook(nil)
	got, err := s.Get(ctx, req.Key)
	if err != nil || got.State != journal.StateUnknown || got.Lease.Token != first.Lease.Token {
		t.Fatalf("Get (read before the Retake) = %s token %d, %v; want the unknown record, token %d", got.State, got.Lease.Token, err, first.Lease.Token)
	}
	got, err = s.Get(ctx, req.Key)
	if err != nil || got.State != journal.StatePending || got.Lease.Token != retaken.Token {
		t.Fatalf("Get after the Retake = %s token %d, %v; want pending, token %d (the Retake's)", got.State, got.Lease.Token, err, retaken.Token)
	}
	done, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: retaken.Token, State: journal.StateSucceeded, Output: []byte(`{"ok":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The write put its own record in: the replay needs no read.
	if !bolt.Cached(s, req.Key) {
		t.Error("a settled record just written is not cached")
	}
	got, err = s.Get(ctx, req.Key)
	if err != nil || !reflect.DeepEqual(got, mustFile(t, s, req.Key)) || got.Lease.Token != done.Lease.Token {
		t.Fatalf("Get after Complete = %+v, %v; want the file's record", got, err)
	}
	// The caller's copy is its own.
	got.Output[0] = 'X'
	if again, _ := s.Get(ctx, req.Key); string(again.Output) != `{"ok":true}` {
		t.Fatalf("a caller's change reached the cache: %s", again.Output)
	}
}

func mustFile(t *testing.T, s *bolt.Store, key uuid.UUID) journal.Record {
	t.Helper()
	r, found, err := bolt.FileRecord(s, key)
	if err != nil || !found {
		t.Fatalf("FileRecord(%s) = %v, %v", key, found, err)
	}
	return r
}
