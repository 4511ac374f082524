// The bbolt store. The file holds five buckets: meta (layout version,
// namespace, the clock's line), records (key → codec.Encode), and index,
// counts and fresh (index.go). Memory holds the overlay of non-durable
// records and a cache of settled ones (cache.go), neither filled by the
// open. A layout-1 journal is migrated by its first writer's open
// (migrate.go). bbolt's file lock proves that no other process holds the
// journal, so a pending record written before a writer's open has its
// lease ended as it is read (endStale).
//
// A non-durable pending record lives in its key's stripe overlay and in
// the pending log (pendlog.go) until its outcome, a durable write of its
// key, or Close. Durable writes go through the group commit (commit.go),
// which retries a failed group one write at a time: each write must be
// safe to run twice. The replay path (Begin while another call holds the
// key's lock) reads only the file, so a Retake is always durable.

package bolt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Store is the default Store: one bbolt file per journal. It is safe for
// concurrent use; one process at a time may open the file for writing.
// Concurrent writers share fsyncs (group commit); one key's decisions are
// serialized by a striped lock held from the read that decides to the
// commit that records the decision.
type Store struct {
	path     string
	db       *bbolt.DB
	opts     Options // as given to Open, with defaults applied
	ns       uuid.UUID
	clock    storeClock
	readOnly bool
	// leasesEnded is the store's time at a writer's open, when the leases
	// of records last written before it ended (endStale); zero for a reader.
	leasesEnded time.Time
	// lineDue is the clock's line (meta "clock") that the next write
	// transaction records, nil when the file has it (see clock.go).
	lineDue atomic.Pointer[[]byte]
	// wrote is set by the first write transaction that commits: Close
	// then records the clock's high-water mark.
	wrote atomic.Bool

	stripes [256]stripe
	// touches collects the record writes of the write transaction in
	// progress, and txSeq numbers those transactions: used only inside one.
	touches *txTouches
	txSeq   uint64
	// pendlog keeps the overlay's records on file for a successor.
	pendlog *pendingLog
	// suppressing holds the tools that may have a suppressed record in the
	// file (maySuppress).
	suppressing toolSet
	// legacy: a read-only store of a journal whose indexes are not built;
	// its queries read every record instead.
	legacy bool

	cmu     sync.Mutex
	queue   []*writeOp // writes waiting for a group commit; guarded by cmu
	leading bool       // a writer is committing a group; guarded by cmu
	batch   []*writeOp // the group being committed; the leader's alone
	// groups and grouped count group commits and their writes (benchmarks).
	groups, grouped atomic.Int64

	// closeMu is held shared by every call for its duration and
	// exclusively by Close, so Close waits for calls in progress.
	closeMu sync.RWMutex
	closed  bool // guarded by closeMu
}

// overlaid is a record of the overlay.
type overlaid struct {
	rec *journal.Record
	// unfiled says that the file holds no record of the key: a Begin found
	// none under the key's lock, and the key has been in the overlay ever
	// since (only a write under that lock, or GC, which only removes,
	// changes the file's record). The key's durable write then skips
	// reading the record it replaces (indexPut); any doubt leaves it false.
	unfiled bool
}

// stripe serializes the decisions about the keys that hash to it.
type stripe struct {
	mu sync.Mutex
	// overlay holds records newer than the file's, written without
	// Durable. Guarded by mu. A record in it is replaced, never changed.
	overlay map[uuid.UUID]overlaid
	// cache holds settled records of the stripe's keys as the file has
	// them, under a lock of its own: a replay does not wait for mu.
	cache recordCache
}

var _ journal.Store = (*Store)(nil)

// overlaySnapshot copies every overlay record.
func (s *Store) overlaySnapshot() map[uuid.UUID]*journal.Record {
	out := map[uuid.UUID]*journal.Record{}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		for k, o := range st.overlay {
			c := *o.rec
			out[k] = &c
		}
		st.mu.Unlock()
	}
	return out
}

// Path returns the journal file's path.
func (s *Store) Path() string { return s.path }

// Now returns the store's time, by which it judges leases and expiry:
// journal.Options.Now and Monotonic combined, so that a jump of the wall
// clock does not move it.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) now() time.Time { return s.clock.now() }

// Namespace returns the journal's namespace.
func (s *Store) Namespace() uuid.UUID { return s.ns }

// LocalReads reports that a read of this store costs less than joining a
// flight (a memory-mapped file): the harness then answers a re-issued
// settled call by one read before anything else.
func (s *Store) LocalReads() bool { return true }

func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return journal.ErrClosed
	}
	return nil
}

func (s *Store) exit() { s.closeMu.RUnlock() }

func (s *Store) stripe(key uuid.UUID) *stripe { return &s.stripes[key[0]] }

// Close persists the overlay's records, stops the commit loop and closes
// the file. It waits for calls in progress.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return journal.ErrClosed
	}
	s.closed = true
	var err error
	if !s.readOnly {
		// Every call has returned, so no group commit is running.
		if err = s.flushOverlay(); err != nil {
			err = fmt.Errorf("journal %s: persisting non-durable records: %w", s.path, err)
		} else if s.clock.mono != nil && s.wrote.Load() {
			if err = s.writeTx(s.highWater); err != nil {
				err = fmt.Errorf("journal %s: recording the clock's high-water mark: %w", s.path, err)
			}
		}
	}
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("journal %s: %w", s.path, cerr)
	}
	if !s.readOnly {
		// Removed once the overlay is on file; else kept for the next open.
		if cerr := s.pendlog.close(); cerr != nil && err == nil {
			err = fmt.Errorf("journal %s: %w", s.path, cerr)
		}
	}
	return err
}

// flushOverlay writes the overlay's records, in key order (cheapest for
// bbolt) and in transactions of compactTxRecords.
func (s *Store) flushOverlay() error {
	over := s.overlaySnapshot()
	recs := slices.SortedFunc(maps.Values(over), func(a, b *journal.Record) int { return machine.CompareKeys(a.Key, b.Key) })
	for len(recs) > 0 {
		chunk := recs[:min(len(recs), compactTxRecords)]
		recs = recs[len(chunk):]
		err := s.writeTx(func(tx *bbolt.Tx) error {
			for _, r := range chunk {
				if err := s.indexPut(tx, r, codec.Encode(nil, r), false); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range chunk {
			st := s.stripe(r.Key)
			st.mu.Lock()
			delete(st.overlay, r.Key)
			s.pendlog.drop(r.Key)
			st.mu.Unlock()
		}
	}
	return nil
}
