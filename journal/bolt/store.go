// The bbolt store. The file holds five buckets: meta (layout version,
// namespace, the clock's line), records (key → encoded record,
// codec.Encode), and index, counts and fresh (every secondary
// index and the counters, written in the transaction of the record they
// index: see index.go). Memory holds the overlay of non-durable records
// and a cache of settled ones (cache.go), neither filled by the open, so
// an open reads no record (a writer's checks a small file: checkTree). A
// journal of layout 1 (no index bucket) is migrated by its first writer's
// open (migrate.go).
//
// The files follow a call: open.go opens the file, begin.go decides a
// Begin, write.go records attempts and outcomes, read.go and list.go read,
// gc.go and stats.go walk the indexes, and store.go closes.
//
// Opening for writing: the file's length is checked against its meta page
// before bbolt maps it (boltfile.go), and a panic inside bbolt (it panics,
// or faults on its memory map, on some damaged pages) is turned into
// ErrCorrupt naming the file. bbolt's lock belongs to the open file, not to
// the process, so a second Open of the same path in one process is
// refused like another process's. Since the lock proves that no other
// process holds the journal, every lease found at a writer's open belongs
// to a process that stopped: a pending record read from the file that was
// last written before the open (its Updated is before leasesEnded) has its
// lease ended as of the open, as it is read (endStale), so that the open
// itself reads and writes no record. The store's time never goes backward
// across opens (clock.go), so a record this process writes is never taken
// for an earlier one's.
//
// Non-durable writes: a pending record written with Durable false is kept
// in its key's stripe overlay, which every call on the store consults, so
// it is visible at once; it reaches the file with its outcome, with a
// durable write of the same key, or at Close, and meanwhile lives in the
// pending log too (pendlog.go). Durable writes go through the group commit
// (commit.go), which retries a failed group one write at a time, so each
// write must be safe to run twice. The replay path (Begin on a settled
// record while another call holds its key's lock) is one read
// transaction and reads only the file, which is why a Retake, which makes
// a settled record pending again, is always written durably.

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

// Store is the default Store: one bbolt file per journal. It is safe
// for concurrent use by many goroutines; one process at a time may open the
// file for writing (bbolt's file lock).
//
// Writes are group-committed (see commit.go), so concurrent writers share
// fsyncs. Decisions about one key are serialized by a striped
// per-key mutex held from the read that decides to the commit that records
// the decision. Non-durable writes (BeginRequest.Durable false) live in a
// per-stripe overlay until a durable write of the same key or Close
// persists them.
type Store struct {
	path     string
	db       *bbolt.DB
	lockWait time.Duration
	ns       uuid.UUID
	clock    storeClock
	readOnly bool
	// leasesEnded is the store's time at a writer's open: the lease of a
	// pending record last written before it ended then (see endStale).
	// Zero for a reader.
	leasesEnded time.Time
	// lineDue is the clock's line (meta "clock") that the next write
	// transaction records, nil when the file has it (see clock.go).
	lineDue atomic.Pointer[[]byte]
	// wrote is set by the first write transaction that commits: Close
	// then records the clock's high-water mark.
	wrote atomic.Bool

	stripes [256]stripe
	// touches collects the record writes of the write transaction in
	// progress, and txSeq numbers those transactions; both are used only
	// inside a write transaction, which bbolt runs one at a time (cache.go).
	touches *txTouches
	txSeq   uint64
	// pendlog keeps the overlay's records on file for a successor
	// (pendlog.go); a reader only reads it, at Open.
	pendlog *pendingLog
	// suppressing holds the tools that may have a suppressed record in the
	// file (maySuppress).
	suppressing toolSet
	// legacy: a read-only store of a journal whose indexes are not built
	// (layout 1, or a migration that did not finish). Its queries read
	// every record instead.
	legacy bool

	maxBatch int
	delay    time.Duration

	cmu     sync.Mutex
	queue   []*writeOp // writes waiting for a group commit; guarded by cmu
	leading bool       // a writer is committing a group; guarded by cmu
	batch   []*writeOp // the group being committed; the leader's alone
	// groups and grouped count the group commits and the writes they
	// held, for the benchmarks' writes per group.
	groups, grouped atomic.Int64

	// closeMu is held shared by every call for its duration and
	// exclusively by Close, so Close waits for calls in progress.
	closeMu sync.RWMutex
	closed  bool // guarded by closeMu
}

// overlaid is a record of the overlay.
type overlaid struct {
	rec *journal.Record
	// unfiled says that the file holds no record of the key: a Begin read
	// the file under the key's lock and found none, and the key has been
	// in the overlay ever since. Only a write of the key under its lock
	// (which takes it out of the overlay, and this with it) or GC (which
	// only removes) changes the file's record of a key, so this stays
	// true; the key's durable write then need not read the file for the
	// record it replaces (indexPut). Any doubt leaves it false, which
	// costs that read.
	unfiled bool
}

// stripe serializes the decisions about the keys that hash to it.
type stripe struct {
	mu sync.Mutex
	// overlay holds records newer than the file's: written without
	// Durable and not yet committed. Guarded by mu. A record in it is
	// never changed in place: readers copy it, writers replace it.
	overlay map[uuid.UUID]overlaid
	// cache holds settled records of the stripe's keys as the file has
	// them (cache.go); it has a lock of its own, so that a replay does not
	// wait for a decision holding mu.
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

func (s *Store) lockTimeout() time.Duration { return s.lockWait }

// Path returns the journal file's path.
func (s *Store) Path() string { return s.path }

// Now returns the store's time, by which it judges leases and expiry:
// journal.Options.Now and Monotonic combined as clock.go says, so that a
// jump of the wall clock does not move it.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) now() time.Time { return s.clock.now() }

// Namespace returns the journal's namespace.
func (s *Store) Namespace() uuid.UUID { return s.ns }

// LocalReads reports that a read of this store costs about a microsecond (a
// memory-mapped file), less than joining a flight: the harness then answers
// a re-issued settled call by one read before anything else.
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
		// Removed once the overlay is on file; kept, for the next open,
		// when it is not.
		if cerr := s.pendlog.close(); cerr != nil && err == nil {
			err = fmt.Errorf("journal %s: %w", s.path, cerr)
		}
	}
	return err
}

// flushOverlay writes the overlay's records, in key order (bbolt inserts
// in order without moving what it already holds) and in transactions of
// compactTxRecords.
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
