// List: the records matching a filter, newest first, from the indexes, or
// by scans on a layout-1 journal opened read-only.

package bolt

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// listPage is how many records List reads per read transaction (none is
// held while the caller's loop body runs).
const listPage = 256

// List yields the records matching f, newest first, reading them in pages
// of listPage, each in its own read transaction.
func (s *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		skip, extra, err := s.listUnindexed(ctx, f)
		if err != nil {
			yield(journal.Record{}, err)
			return
		}
		next, err := s.listPager(ctx, &f, skip)
		if err != nil {
			yield(journal.Record{}, err)
			return
		}
		s.listMerged(ctx, &f, next, extra, yield)
	}
}

// listUnindexed returns the records matching f that the index does not
// hold yet, newest first: the overlay's and the fresh bucket's. skip holds
// every record read that way, matching or not, for the index's pages to
// leave out, should a write move one into the index meanwhile.
func (s *Store) listUnindexed(ctx context.Context, f journal.Filter) (skip map[uuid.UUID]*journal.Record, extra []*journal.Record, err error) {
	if err := s.enter(ctx); err != nil {
		return nil, nil, err
	}
	over := s.overlaySnapshot()
	skip = maps.Clone(over)
	err = s.view(func(tx *bbolt.Tx) error {
		fresh, err := s.freshEntries(tx)
		if err != nil {
			return err
		}
		recs := tx.Bucket(bucketRecords)
		for i := range fresh {
			e := &fresh[i]
			if _, ok := skip[e.key]; ok || !e.mayMatch(&f) {
				continue
			}
			var r journal.Record
			if found, err := s.readIn(recs, e.key, &r); err != nil {
				return err
			} else if found {
				skip[e.key] = &r
			}
		}
		return nil
	})
	s.exit()
	if err != nil {
		return nil, nil, err
	}
	for _, r := range skip {
		if machine.MatchFilter(r, &f) {
			extra = append(extra, r)
		}
	}
	slices.SortFunc(extra, machine.NewerFirst)
	return skip, extra, nil
}

// pager reads List's next page in tx, and says whether it was the last.
type pager func(tx *bbolt.Tx) (page []*journal.Record, done bool, err error)

// listPager returns List's pager. A Session filter, an unknown or pending
// State filter, and a legacy journal list their entries first, in one read
// transaction; anything else walks the time index (createdWalk).
func (s *Store) listPager(ctx context.Context, f *journal.Filter, skip map[uuid.UUID]*journal.Record) (pager, error) {
	if !s.legacy && f.Session == "" && f.State != journal.StateUnknown && f.State != journal.StatePending {
		return s.createdWalk(f, skip), nil
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var entries []*ixEntry
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		switch {
		case s.legacy:
			entries, err = s.scanEntries(tx, f)
		case f.Session != "":
			entries, err = s.sessionEntries(tx, f.Session)
		default:
			entries, err = openKeys(tx.Bucket(bucketIndex), f.State)
			sortNewestFirst(entries)
		}
		return err
	})
	s.exit()
	if err != nil {
		return nil, err
	}
	return func(tx *bbolt.Tx) ([]*journal.Record, bool, error) {
		chunk := entries[:min(len(entries), listPage)]
		entries = entries[len(chunk):]
		page, err := s.readPage(tx, chunk, f, skip)
		return page, len(entries) == 0, err
	}, nil
}

// sessionEntries lists the entries (key, creation time) of session's
// records newest first, from one range of the session index; the caller
// reads the records and keeps those that match (a session hashed alike).
func (s *Store) sessionEntries(tx *bbolt.Tx, session string) ([]*ixEntry, error) {
	h := sessionHash(session)
	prefix := append([]byte{pfxSession}, h[:]...)
	var out []*ixEntry
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != sessionKeyLen {
			return nil, fmt.Errorf("journal %s: %w: session index entry %x", s.path, journal.ErrCorrupt, clip(k))
		}
		out = append(out, &ixEntry{created: readTime(k[9:17]), key: uuid.UUID(k[17:])})
	}
	slices.Reverse(out) // the range ascends by creation time, then key
	return out, nil
}

// sortNewestFirst orders entries as List yields records.
func sortNewestFirst(out []*ixEntry) {
	slices.SortFunc(out, func(a, b *ixEntry) int {
		if a.created != b.created {
			return cmp.Compare(b.created, a.created)
		}
		return machine.CompareKeys(b.key, a.key)
	})
}

// scanEntries lists every record matching f, newest first, by reading them
// all (a legacy journal).
func (s *Store) scanEntries(tx *bbolt.Tx, f *journal.Filter) ([]*ixEntry, error) {
	var out []*ixEntry
	err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		r, err := codec.Decode(v)
		if err != nil {
			return fmt.Errorf("journal %s: key %x: %w", s.path, clip(k), err)
		}
		if machine.MatchFilter(&r, f) {
			out = append(out, &ixEntry{key: r.Key, created: nanos(r.Created)})
		}
		return nil
	})
	sortNewestFirst(out)
	return out, err
}

// createdWalk returns List's pager over the time index, from the newest
// entry down (from Until's to Since's).
func (s *Store) createdWalk(f *journal.Filter, over map[uuid.UUID]*journal.Record) pager {
	var stop []byte // the walk ends below this key (Since's), nil: at the index's start
	if !f.Since.IsZero() {
		stop = appendTime([]byte{pfxTime}, nanos(f.Since))
	}
	below := []byte{pfxTime + 1} // the next entry to read is below this key
	if !f.Until.IsZero() {
		below = appendTime([]byte{pfxTime}, nanos(f.Until))
	}
	return func(tx *bbolt.Tx) ([]*journal.Record, bool, error) {
		c := tx.Bucket(bucketIndex).Cursor()
		k, _ := c.Seek(below)
		if k == nil {
			k, _ = c.Last()
		}
		for k != nil && bytes.Compare(k, below) >= 0 {
			k, _ = c.Prev()
		}
		chunk := make([]*ixEntry, 0, listPage)
		done := false
		for ; len(chunk) < listPage; k, _ = c.Prev() {
			if k == nil || k[0] != pfxTime || (stop != nil && bytes.Compare(k, stop) < 0) {
				done = true
				break
			}
			if len(k) != timeKeyLen { // k[0] is pfxTime
				return nil, false, fmt.Errorf("journal %s: %w: time index entry %x", s.path, journal.ErrCorrupt, k)
			}
			chunk = append(chunk, &ixEntry{created: readTime(k[1:9]), key: uuid.UUID(k[9:])})
			below = bytes.Clone(k)
		}
		page, err := s.readPage(tx, chunk, f, over)
		return page, done, err
	}
}

// readPage reads the records of chunk that still match f, skipping those
// the overlay holds.
func (s *Store) readPage(tx *bbolt.Tx, chunk []*ixEntry, f *journal.Filter, over map[uuid.UUID]*journal.Record) ([]*journal.Record, error) {
	recs := tx.Bucket(bucketRecords)
	page := make([]*journal.Record, 0, len(chunk))
	for _, e := range chunk {
		if _, ok := over[e.key]; ok {
			continue
		}
		// The record may have been removed or changed since the index was read.
		var r journal.Record
		if found, err := s.readIn(recs, e.key, &r); err != nil {
			return nil, err
		} else if found && machine.MatchFilter(&r, f) {
			page = append(page, &r)
		}
	}
	return page, nil
}

// listMerged yields the pages of next merged with extra, newest first,
// until f.Limit records or the caller stops.
func (s *Store) listMerged(ctx context.Context, f *journal.Filter, next pager, extra []*journal.Record, yield func(journal.Record, error) bool) {
	n := 0
	emit := func(r *journal.Record) bool {
		if f.Limit > 0 && n >= f.Limit {
			return false
		}
		n++
		return yield(*r, nil)
	}
	for done := false; !done; {
		if f.Limit > 0 && n >= f.Limit {
			return
		}
		if err := s.enter(ctx); err != nil {
			yield(journal.Record{}, err)
			return
		}
		var page []*journal.Record
		err := s.view(func(tx *bbolt.Tx) error {
			var err error
			page, done, err = next(tx)
			return err
		})
		s.exit()
		if err != nil {
			yield(journal.Record{}, err)
			return
		}
		for _, r := range page {
			for len(extra) > 0 && machine.NewerFirst(extra[0], r) < 0 {
				if !emit(extra[0]) {
					return
				}
				extra = extra[1:]
			}
			if !emit(r) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(journal.Record{}, err)
			return
		}
	}
	for _, r := range extra {
		if !emit(r) {
			return
		}
	}
}
