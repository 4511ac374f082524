package bolt

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Stats counts the journal's records from the counters and indexes kept in
// the file, without reading records (a legacy journal is scanned instead).
// SizeBytes is the file's size.
func (s *Store) Stats(ctx context.Context) (journal.Stats, error) {
	return s.stats(ctx, s.legacy)
}

// ScanStats counts the journal's records by reading every one, as a check
// of Stats, whose counts it must equal.
func (s *Store) ScanStats(ctx context.Context) (journal.Stats, error) {
	return s.stats(ctx, true)
}

func (s *Store) stats(ctx context.Context, scan bool) (journal.Stats, error) {
	if err := s.enter(ctx); err != nil {
		return journal.Stats{}, err
	}
	defer s.exit()
	over := s.overlaySnapshot()
	now := s.now()
	var st journal.Stats
	err := s.view(func(tx *bbolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		if scan {
			st = machine.NewStats()
			n := 0
			return recs.ForEach(func(k, v []byte) error {
				if n++; n%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				r, err := codec.Decode(v)
				if err != nil {
					return wrapKey(s.path, k, err)
				}
				if _, ok := over[r.Key]; !ok {
					machine.AddStats(&st, &r, now)
				}
				return nil
			})
		}
		var err error
		if st, err = indexedStats(tx, now); err != nil {
			return fmt.Errorf("journal %s: %w", s.path, err)
		}
		// The fresh bucket's records are in the counters, not the indexes.
		fresh, err := s.freshEntries(tx)
		if err != nil {
			return err
		}
		t := now.UnixNano()
		for _, e := range fresh {
			if e.expired(t) {
				st.Expired++
			}
			if e.overdue(t) {
				st.OverdueUnknown++
			}
			created := time.Unix(0, e.created).UTC()
			if st.Oldest.IsZero() || created.Before(st.Oldest) {
				st.Oldest = created
			}
			if created.After(st.Newest) {
				st.Newest = created
			}
		}
		// The overlay's records replace the file's of the same key.
		for key := range over {
			if v := recs.Get(key[:]); v != nil {
				r, err := codec.Decode(v)
				if err != nil {
					return wrapKey(s.path, key[:], err)
				}
				subStats(&st, &r, now)
			}
		}
		return nil
	})
	if err != nil {
		return journal.Stats{}, err
	}
	for _, r := range over {
		machine.AddStats(&st, r, now)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return journal.Stats{}, fmt.Errorf("journal: %w", err)
	}
	st.SizeBytes = fi.Size()
	return st, nil
}

// subStats takes r out of s (Oldest and Newest stay: r's key is in the
// overlay, whose record is counted next).
func subStats(s *journal.Stats, r *journal.Record, now time.Time) {
	s.Records--
	if s.ByState[r.State]--; s.ByState[r.State] == 0 {
		delete(s.ByState, r.State)
	}
	if s.ByTool[r.Intent.Tool]--; s.ByTool[r.Intent.Tool] == 0 {
		delete(s.ByTool, r.Intent.Tool)
	}
	s.Attempts -= len(r.Attempts)
	if journal.Expired(r, now) {
		s.Expired--
	}
	if machine.Overdue(r, now) {
		s.OverdueUnknown--
	}
}
