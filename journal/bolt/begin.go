package bolt

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Begin decides what happens to an intent; see Store.
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := machine.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	defer s.exit()

	st := s.stripe(req.Key)
	if res, ok := s.replayCached(st, req); ok {
		return res, nil
	}
	if !st.mu.TryLock() {
		// The stripe is busy (a commit may hold it for an fsync): the
		// replay path, without the lock. Else the read under the lock
		// answers a replay too, in one transaction instead of two.
		if res, ok, err := s.replayFile(req); ok || err != nil {
			return res, err
		}
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	return s.beginLocked(st, &req)
}

// replayCached answers a replay from the cache, as replayFile does from
// the file (the cache follows every write). ok is false when it cannot.
func (s *Store) replayCached(st *stripe, req journal.BeginRequest) (res journal.BeginResult, ok bool) {
	var hot journal.Record
	if hit, _, _ := st.cache.cached(req.Key, &hot); hit {
		return s.replayOf(&hot, &req)
	}
	return journal.BeginResult{}, false
}

// replayFile answers a replay from the file without the key's lock. A live
// settled record in the file is the truth: the overlay only ever holds
// pending records, and only Retake (decided under the key's lock) replaces
// a live settled record. ok is false when Begin must go on under the lock.
func (s *Store) replayFile(req journal.BeginRequest) (res journal.BeginResult, ok bool, err error) {
	var file journal.Record
	found, err := s.readFile(req.Key, &file)
	if err != nil || !found {
		return journal.BeginResult{}, false, err
	}
	res, ok = s.replayOf(&file, &req)
	return res, ok, nil
}

// replayOf answers req from r when r is live and settled and the decision
// writes nothing.
func (s *Store) replayOf(r *journal.Record, req *journal.BeginRequest) (journal.BeginResult, bool) {
	now := s.now()
	if !r.State.Settled() || journal.Expired(r, now) {
		return journal.BeginResult{}, false
	}
	d := machine.DecideBegin(r, req, now)
	return d.Result, d.Write == nil && d.Suppress == nil
}

// beginRead is what Begin read and decided under the key's lock.
type beginRead struct {
	d        machine.BeginDecision
	now      time.Time
	fileNone bool            // neither the overlay nor the file holds the key
	guarded  bool            // the guard was asked with d
	g        *journal.Record // the guard's answer, if guarded
}

// beginLocked is Begin under the lock of st, req's key's stripe: decide,
// lock a suppression's stripe too, ask the guard, and write.
func (s *Store) beginLocked(st *stripe, req *journal.BeginRequest) (journal.BeginResult, error) {
	var b beginRead
	if err := s.decideLocked(st, *req, &b); err != nil {
		return journal.BeginResult{}, err
	}
	var sst *stripe // the stripe of d.Suppress's key, locked too
	if b.d.Suppress != nil {
		if sst = s.stripe(b.d.Suppress.Key); sst != st {
			if err := s.lockSuppression(st, sst, *req, &b); err != nil {
				return journal.BeginResult{}, err
			}
			defer sst.mu.Unlock()
		}
	}
	if b.d.Guard {
		if !b.guarded {
			err := s.view(func(tx *bbolt.Tx) (err error) {
				b.g, err = s.guardIn(tx, tx.Bucket(bucketRecords), req, b.now)
				return err
			})
			if err != nil {
				return journal.BeginResult{}, err
			}
		}
		if b.g != nil {
			return journal.BeginResult{Outcome: journal.Guarded, Record: *b.g}, nil
		}
	}
	return s.beginWrite(st, sst, req, &b)
}

// decideLocked reads the key's record, decides and, when the decision
// asks it, asks the guard, in one read transaction.
func (s *Store) decideLocked(st *stripe, req journal.BeginRequest, b *beginRead) error {
	var fileRec journal.Record // the file's record: on the stack, like a replay's read
	return s.view(func(tx *bbolt.Tx) error {
		var err error
		var cur *journal.Record
		recs := tx.Bucket(bucketRecords) // opened once: the guard reads it too
		if o, ok := st.overlay[req.Key]; ok {
			cur = o.rec // read only, as in current
		} else {
			found, err := s.readIn(recs, req.Key, &fileRec)
			if err == nil && !found {
				err = s.recorded(tx, &req)
			}
			if err != nil {
				return err
			}
			if found {
				cur = &fileRec
			}
			b.fileNone = !found
		}
		now := s.now()
		b.now = now
		b.d = machine.DecideBegin(cur, &req, now)
		if b.d.Guard && b.d.Suppress == nil {
			b.guarded = true
			b.g, err = s.guardIn(tx, recs, &req, now)
		}
		return err
	})
}

// recorded returns an error wrapping ErrCorrupt when req's key, absent
// from the records bucket, has a fresh entry or an entry in its session's
// range of the session index: a damaged key or page must not make a
// recorded intent look new.
func (s *Store) recorded(tx *bbolt.Tx, req *journal.BeginRequest) error {
	key, where := req.Key, ""
	if s.legacy {
		return nil
	} else if tx.Bucket(bucketFresh).Get(key[:]) != nil {
		where = "the fresh bucket holds its entry"
	}
	h := sessionHash(req.Intent.Session)
	prefix := append([]byte{pfxSession}, h[:]...)
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); where == "" && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == sessionKeyLen && uuid.UUID(k[sessionKeyLen-16:]) == key {
			where = fmt.Sprintf("the session index holds its entry %x", k)
		}
	}
	if where == "" {
		return nil
	}
	return fmt.Errorf("journal %s: %w: key %s: the records bucket has no record of it, but %s (a damaged key or page; agentctl verify lists damaged records)",
		s.path, journal.ErrCorrupt, key, where)
}

// lockSuppression locks sst, the suppression key's stripe, beside st, in
// index order so that two mismatches cannot deadlock: when sst comes
// first, st is let go, both are taken, and the decision is made again.
func (s *Store) lockSuppression(st, sst *stripe, req journal.BeginRequest, b *beginRead) error {
	if b.d.Suppress.Key[0] >= req.Key[0] {
		sst.mu.Lock()
		return nil
	}
	st.mu.Unlock()
	sst.mu.Lock()
	st.mu.Lock()
	cur, err := s.current(st, req.Key)
	if err != nil {
		sst.mu.Unlock()
		return err
	}
	b.fileNone = false // not known this time: the file is read again at the write
	now := s.now()
	b.now = now
	b.d = machine.DecideBegin(cur, &req, now)
	return nil
}

// beginWrite records b's decision: the suppression, in sst, and the
// record of req's key, in st.
func (s *Store) beginWrite(st, sst *stripe, req *journal.BeginRequest, b *beginRead) (journal.BeginResult, error) {
	d, now := &b.d, b.now
	if d.Write == nil && d.Suppress == nil {
		return d.Result, nil
	}
	if s.readOnly {
		if d.Write == nil {
			return d.Result, nil // a Mismatch, whose suppression cannot be recorded
		}
		return journal.BeginResult{}, fmt.Errorf("journal %s: %w: begin %s", s.path, journal.ErrReadOnly, req.Key)
	}
	if d.Suppress != nil {
		sc, err := s.current(sst, d.Suppress.Key)
		if err != nil {
			return journal.BeginResult{}, err
		}
		// Durable like every suppression: the guard reads the file.
		if w := machine.PlaceSuppression(sc, d.Suppress, now); w != nil {
			if err := s.persist(sst, w, true, false); err != nil {
				return journal.BeginResult{}, err
			}
		}
	}
	if d.Write != nil {
		if err := s.persist(st, d.Write, req.Durable || d.Durable, b.fileNone); err != nil {
			return journal.BeginResult{}, err
		}
	}
	return d.Result, nil
}

// guardIn returns a live suppressed record that blocks req, or nil, read
// in tx, whose records bucket recs is open.
func (s *Store) guardIn(tx *bbolt.Tx, recs *bbolt.Bucket, req *journal.BeginRequest, now time.Time) (found *journal.Record, err error) {
	check := func(k, v []byte) (bool, error) {
		r, err := decodeStored(k, v)
		if err != nil {
			return false, err
		}
		if r.Key != req.Key && machine.GuardBlocks(&r, req, now) {
			found = &r
			return true, nil
		}
		return false, nil
	}
	if s.legacy {
		c := recs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if ok, err := check(k, v); ok || err != nil {
				return found, wrapKey(s.path, k, err)
			}
		}
		return nil, nil
	}
	if !s.maySuppress(req.Intent.Tool) {
		return nil, nil
	}
	// The fresh bucket's suppressed records, not in the guard index yet.
	if fresh := tx.Bucket(bucketFresh); fresh != nil {
		c := fresh.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) != 16 || len(v) != freshValueLen {
				return nil, fmt.Errorf("journal %s: %w: fresh entry %x → %x", s.path, journal.ErrCorrupt, clip(k), clip(v))
			}
			if journal.State(v[0]) != journal.StateSuppressed {
				continue
			}
			if v := recs.Get(k); v != nil {
				if ok, err := check(k, v); ok || err != nil {
					return found, wrapKey(s.path, k, err)
				}
			}
		}
	}
	in := &req.Intent
	prefix := guardPrefix(in.Tenant, in.Session, in.Tool)
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		key, err := keyTail(k)
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", s.path, err)
		}
		if v := recs.Get(key[:]); v != nil {
			if ok, err := check(key[:], v); ok || err != nil {
				return found, wrapKey(s.path, key[:], err)
			}
		}
	}
	return nil, nil
}

// toolSet is a set of tool names, safe for concurrent use.
type toolSet struct {
	mu sync.Mutex
	m  map[string]struct{} // guarded by mu
}

func (t *toolSet) add(tool string) {
	t.mu.Lock()
	if _, ok := t.m[tool]; !ok {
		if t.m == nil {
			t.m = map[string]struct{}{}
		}
		t.m[strings.Clone(tool)] = struct{}{} // tool may alias a decoded record
	}
	t.mu.Unlock()
}

func (t *toolSet) has(tool string) bool {
	t.mu.Lock()
	_, ok := t.m[tool]
	t.mu.Unlock()
	return ok
}

// loadSuppressing fills s.suppressing from the counters at open: each tool
// whose counters count a suppressed record, or do not decode.
func (s *Store) loadSuppressing() error {
	return s.view(func(tx *bbolt.Tx) error {
		counts := tx.Bucket(bucketCounts)
		if counts == nil {
			return nil // a legacy reader's guard reads every record instead
		}
		return counts.ForEach(func(k, v []byte) error {
			if len(k) == 0 || k[0] != 't' {
				return nil
			}
			var c toolCounts
			if c.decode(v) != nil || c[journal.StateSuppressed-1] != 0 {
				s.suppressing.add(string(k[1:]))
			}
			return nil
		})
	})
}

// maySuppress reports whether the file may hold a suppressed record of
// tool; when not, the guard reads nothing. The set is filled from the
// counters at open, and a write of a suppressed record adds its tool
// before its transaction commits; a tool stays until the store reopens.
func (s *Store) maySuppress(tool string) bool { return s.suppressing.has(tool) }
