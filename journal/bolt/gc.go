package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// DefaultGCBatch is how many records GC, and GCBatch given no max, remove
// per transaction.
const DefaultGCBatch = 256

// GC removes every expired record, in transactions of DefaultGCBatch
// (see GCBatch); see Store. Records still only in the overlay are left
// for Close to persist.
func (s *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if err := s.enter(ctx); err != nil {
		return journal.GCResult{}, err
	}
	if s.readOnly && !opts.DryRun {
		s.exit()
		return journal.GCResult{}, fmt.Errorf("journal %s: %w: gc", s.path, journal.ErrReadOnly)
	}
	if s.legacy { // a read-only dry run: the scan counts what GC would do
		s.exit()
		st, err := s.stats(ctx, true)
		return journal.GCResult{Removed: st.Expired, KeptUnknown: st.OverdueUnknown}, err
	}
	now := s.now()
	over := s.overlaySnapshot()
	var res journal.GCResult
	err := s.view(func(tx *bbolt.Tx) error {
		ix := tx.Bucket(bucketIndex)
		res.KeptUnknown = countOpen(ix, journal.StateUnknown, now.UnixNano(), over) + countOpen(ix, journal.StatePending, now.UnixNano(), over)
		fresh, err := s.freshEntries(tx)
		if err != nil {
			return err
		}
		for _, e := range fresh {
			if _, ok := over[e.key]; ok {
				continue
			}
			if e.overdue(now.UnixNano()) {
				res.KeptUnknown++
			} else if opts.DryRun && e.expired(now.UnixNano()) {
				res.Removed++
			}
		}
		if opts.DryRun {
			walkExpired(ix, now.UnixNano(), func(key uuid.UUID) bool {
				if _, ok := over[key]; !ok { // else a newer record hides it
					res.Removed++
				}
				return true
			})
		}
		return nil
	})
	s.exit()
	if err != nil {
		return journal.GCResult{}, err
	}
	for _, r := range over {
		if machine.Overdue(r, now) {
			res.KeptUnknown++
		}
	}
	if opts.DryRun {
		return res, nil
	}
	for {
		n, err := s.gcBatch(ctx, DefaultGCBatch, now)
		res.Removed += n
		if err != nil || n == 0 {
			return res, err
		}
	}
}

// countOpen counts the unknown or pending (st) records past their TTL at
// t, from the 'u' index, leaving out the keys of skip.
func countOpen(ix *bbolt.Bucket, st journal.State, t int64, skip map[uuid.UUID]*journal.Record) int {
	prefix := openPrefix(st)
	n := 0
	c := ix.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+24; k, _ = c.Next() {
		if readTime(k[len(prefix):]) > t {
			break
		}
		if _, ok := skip[uuid.UUID(k[len(k)-16:])]; !ok {
			n++
		}
	}
	return n
}

// GCBatch removes at most max expired records (DefaultGCBatch when max is
// zero or less), the oldest first, in one group-committed transaction, and
// returns how many it removed: zero when none is expired. Unknown and
// pending records are never removed. A background loop calls it until it
// returns zero, pauses, and repeats.
func (s *Store) GCBatch(ctx context.Context, max int) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.exit()
	if max <= 0 {
		max = DefaultGCBatch
	}
	return s.gcBatch(ctx, max, s.now())
}

func (s *Store) gcBatch(ctx context.Context, max int, now time.Time) (int, error) {
	if s.readOnly {
		return 0, fmt.Errorf("journal %s: %w: gc", s.path, journal.ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := now.UnixNano()
	var removed int
	err := s.commit(func(tx *bbolt.Tx) error {
		removed = 0
		recs := tx.Bucket(bucketRecords)
		keys := make([]uuid.UUID, 0, max)
		fresh, err := s.freshEntries(tx)
		if err != nil {
			return err
		}
		for _, e := range fresh {
			if len(keys) < max && e.expired(t) {
				keys = append(keys, e.key)
			}
		}
		if len(keys) < max {
			walkExpired(tx.Bucket(bucketIndex), t, func(key uuid.UUID) bool {
				keys = append(keys, key)
				return len(keys) < max
			})
		}
		for _, key := range keys {
			var r journal.Record
			found, err := s.readIn(recs, key, &r)
			if err != nil {
				return err
			}
			if !found || !journal.Expired(&r, now) { // checked again: the index says so, the record decides
				continue
			}
			if err := s.indexDelete(tx, key); err != nil {
				return err
			}
			removed++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}
