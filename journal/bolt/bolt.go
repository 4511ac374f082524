// The bbolt store. The file holds three buckets: meta (layout version,
// namespace), records (key → encoded record, codec.Encode) and index
// (every secondary index and the counters, written in the transaction of
// the record they index: see index.go). Nothing is held in memory but the
// overlay of non-durable records, so an open reads no record. A journal of
// layout 1 (no index bucket) is migrated by its first writer's open
// (migrate.go).
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
// durable write of the same key, or at Close. It is also appended, without
// fsync, to the pending log beside the file (pendlog.go), which the next
// writer's Open folds into the file: a killed process's write-aheads
// outlive it, and only a system crash can lose them. Durable writes go through the
// group commit (commit.go): one goroutine takes the first queued write,
// adds every write queued behind it (up to Options.MaxBatchSize, waiting up
// to Options.MaxBatchDelay when that is set) and commits them in one
// transaction; a group whose transaction fails is retried one write at a
// time, so each write must be safe to run twice. The replay path (Begin on
// a settled record while another call holds its key's lock) is one read
// transaction and reads only the file, which is why a Retake, which makes
// a settled record pending again, is always written durably.

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

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

// Open opens the journal at path, creating it (mode 0600) unless
// opts.Journal.ReadOnly. It returns an error wrapping ErrInUse when another process
// holds the file past opts.LockTimeout, ErrCorrupt when the file is not a
// journal or is damaged, ErrNewerVersion when a newer schema wrote it, and
// ErrNamespaceMismatch when opts.Journal.Namespace differs from the stored one;
// every error names the file.
func Open(path string, opts *Options) (s *Store, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	jo := o.Journal
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	clk := storeClock{wall: jo.Now, mono: jo.Monotonic}
	if clk.wall == nil {
		clk.wall = time.Now
		if clk.mono == nil {
			clk.mono = hostMonotonic
		}
	}
	if o.MaxBatchSize <= 0 {
		o.MaxBatchSize = defaultMaxBatch
	}
	s = &Store{
		path:     path,
		lockWait: o.LockTimeout,
		clock:    clk,
		readOnly: jo.ReadOnly,
		maxBatch: o.MaxBatchSize,
		delay:    o.MaxBatchDelay,
	}
	switch fi, err := os.Stat(path); {
	case err == nil && fi.Size() == 0:
		// bbolt would make an empty file a new database, and a new journal
		// has a new namespace: every key would change. A journal truncated
		// to nothing must not pass for a fresh one.
		return nil, fmt.Errorf("journal %s: %w: empty file (remove it to create a new journal)", path, journal.ErrCorrupt)
	case err != nil && jo.ReadOnly:
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if !jo.ReadOnly {
		if err := createBolt(path, jo.Namespace); err != nil && !errors.Is(err, errNoLink) {
			return nil, err
		}
	}
	defer func() {
		// bbolt can panic (or fault on the mapped file) on damaged pages.
		if p := recover(); p != nil {
			if s != nil && s.db != nil {
				_ = s.db.Close()
			}
			s, err = nil, fmt.Errorf("journal %s: %w: %v", path, journal.ErrCorrupt, p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	db, err := openBolt(path, &bbolt.Options{
		Timeout:      o.LockTimeout,
		ReadOnly:     jo.ReadOnly,
		FreelistType: bbolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	s.db = db
	if err := s.checkFile(jo.Namespace); err != nil {
		_ = db.Close()
		s.db = nil
		return nil, err
	}
	if !jo.ReadOnly {
		if err := s.migrate(); err != nil {
			_ = db.Close()
			s.db = nil
			return nil, err
		}
	}
	opened, err := s.startClock()
	if err != nil {
		_ = db.Close()
		s.db = nil
		return nil, fmt.Errorf("journal %s: starting the clock: %w", path, err)
	}
	s.pendlog = newPendingLog(path)
	if !jo.ReadOnly {
		s.leasesEnded = opened
		_, err = s.recoverPending()
	} else {
		err = s.loadPending()
	}
	if err == nil {
		err = s.loadSuppressing()
	}
	if err != nil {
		_ = db.Close()
		s.db = nil
		return nil, err
	}
	return s, nil
}

// endStale ends, as of the open, the lease of r, read from the file, when
// a process that stopped wrote it: the file lock means that no other
// process has the journal open for writing, so a pending record last
// written before this open belongs to a crashed owner. Without this, a
// restarted agent would find its own intents "in flight elsewhere" until
// their leases ran out. Nothing is written: the next write of the record
// keeps the ended lease.
func (s *Store) endStale(r *journal.Record) {
	if r.State == journal.StatePending && r.Updated.Before(s.leasesEnded) && r.Lease.Expires.After(s.leasesEnded) {
		r.Lease.Expires = s.leasesEnded
	}
}

// openError turns an error of bbolt.Open into one of ours, naming the file.
func openError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("journal %s: %w (lock not released within the lock timeout)", path, journal.ErrInUse)
	case errors.As(err, &pe):
		return fmt.Errorf("open journal: %w", err)
	default:
		// ErrInvalid, ErrChecksum, ErrVersionMismatch, "file size too
		// small" and friends: the file is not a bbolt file we can read.
		return fmt.Errorf("journal %s: %w: %v", path, journal.ErrCorrupt, err)
	}
}

// checkFile verifies that the file is a whole journal of a version we read,
// and creates the buckets of a new one.
func (s *Store) checkFile(ns uuid.UUID) error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	create := false
	check := func(tx *bbolt.Tx) error {
		// A truncated file maps pages that are not there; reading them
		// would fault. The meta page says how big the file must be.
		if fi.Size() < tx.Size() {
			return fmt.Errorf("journal %s: %w: truncated: %d bytes, the journal needs %d", s.path, journal.ErrCorrupt, fi.Size(), tx.Size())
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
			if !empty || s.readOnly {
				return fmt.Errorf("journal %s: %w: a bbolt file without the journal's meta bucket", s.path, journal.ErrCorrupt)
			}
			create = true
			return nil
		}
		v, n := binary.Uvarint(meta.Get(metaVersion))
		if n <= 0 {
			return fmt.Errorf("journal %s: %w: no schema version", s.path, journal.ErrCorrupt)
		}
		if v > layoutVersion {
			return fmt.Errorf("journal %s: %w: schema version %d, this package reads up to %d", s.path, journal.ErrNewerVersion, v, layoutVersion)
		}
		stored := meta.Get(metaNamespace)
		if len(stored) != 16 {
			return fmt.Errorf("journal %s: %w: namespace of %d bytes", s.path, journal.ErrCorrupt, len(stored))
		}
		s.ns = uuid.UUID(stored)
		if ns != uuid.Nil && ns != s.ns {
			return fmt.Errorf("journal %s: %w: given %s", s.path, journal.ErrNamespaceMismatch, ns)
		}
		recs := tx.Bucket(bucketRecords)
		if recs == nil {
			return fmt.Errorf("journal %s: %w: no records bucket", s.path, journal.ErrCorrupt)
		}
		// Not migrated yet: a writer's open migrates it (migrate.go); a
		// reader's queries read every record.
		s.legacy = v < layoutVersion || meta.Get(metaMigrating) != nil ||
			tx.Bucket(bucketIndex) == nil || tx.Bucket(bucketCounts) == nil || tx.Bucket(bucketFresh) == nil
		return nil
	}
	// Checking is a read: a write transaction would rewrite the meta page
	// (and fsync) on every open.
	if err := s.db.View(check); err != nil || !create {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error { return s.create(tx, ns) })
}

func (s *Store) create(tx *bbolt.Tx, ns uuid.UUID) error {
	if ns == uuid.Nil {
		ns = uuid.New()
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(metaVersion, binary.AppendUvarint(nil, layoutVersion)); err != nil {
		return err
	}
	if err := meta.Put(metaNamespace, ns[:]); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketRecords); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketIndex, bucketCounts, bucketFresh} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	s.ns = ns
	return nil
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

// view runs fn in a read transaction, turning a panic of bbolt on a damaged
// page into ErrCorrupt.
func (s *Store) view(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal %s: %w: %v", s.path, journal.ErrCorrupt, p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return s.db.View(fn)
}

// read returns the committed record for key, or nil.
func (s *Store) read(key uuid.UUID) (r *journal.Record, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		r, err = s.readTx(tx, key)
		return err
	})
	return r, err
}

// readTx is read within the transaction tx.
func (s *Store) readTx(tx *bbolt.Tx, key uuid.UUID) (*journal.Record, error) {
	return s.readRecs(tx.Bucket(bucketRecords), key)
}

// readRecs is read from recs, the records bucket of a transaction.
func (s *Store) readRecs(recs *bbolt.Bucket, key uuid.UUID) (*journal.Record, error) {
	var d journal.Record
	if ok, err := s.readIn(recs, key, &d); !ok || err != nil {
		return nil, err
	}
	return &d, nil
}

// readInto reads the committed record for key into dst within tx, and
// reports whether there is one: the replay path's read, whose record stays
// on the caller's stack.
func (s *Store) readInto(tx *bbolt.Tx, key uuid.UUID, dst *journal.Record) (bool, error) {
	return s.readIn(tx.Bucket(bucketRecords), key, dst)
}

// readIn is readInto from recs, the records bucket of a transaction.
func (s *Store) readIn(recs *bbolt.Bucket, key uuid.UUID, dst *journal.Record) (bool, error) {
	v := recs.Get(key[:])
	if v == nil {
		return false, nil
	}
	d, err := codec.Decode(v)
	if err != nil {
		return false, fmt.Errorf("journal %s: key %s: %w", s.path, key, err)
	}
	s.endStale(&d)
	*dst = d
	return true, nil
}

// readFile is readInto in a read transaction of its own, or from the
// cache of settled records (cache.go).
func (s *Store) readFile(key uuid.UUID, dst *journal.Record) (found bool, err error) {
	c := &s.stripes[key[0]].cache
	hit, gen, fill := c.cached(key, dst)
	if hit {
		return true, nil
	}
	err = s.view(func(tx *bbolt.Tx) error {
		found, err = s.readInto(tx, key, dst)
		return err
	})
	if testHookRead != nil {
		testHookRead(key)
	}
	if err == nil && found && fill {
		c.fill(dst, gen)
	}
	return found, err
}

// current returns the newest record for key: the overlay's, else the
// file's. The key's stripe is locked. The overlay's record is returned
// itself, not a copy: callers only read it, and the machine functions
// they give it to do not modify it.
func (s *Store) current(st *stripe, key uuid.UUID) (*journal.Record, error) {
	if o, ok := st.overlay[key]; ok {
		return o.rec, nil
	}
	return s.read(key)
}

// encBufs recycles the encodings of records written durably (persist),
// up to maxPooledEnc bytes each.
var encBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledEnc = 16 << 10

// persist records r: durably through the commit loop, or in the overlay
// and the pending log (durably when the log refuses it). The key's stripe
// is locked. persist takes r over: the overlay keeps r itself, not a copy,
// so the caller reads r afterwards but never changes it. fileNone says
// that the caller, holding the key's lock, found the key neither in the
// overlay nor in the file (see overlaid.unfiled).
func (s *Store) persist(st *stripe, r *journal.Record, durable, fileNone bool) error {
	r.Version = journal.SchemaVersion
	prev, inOverlay := st.overlay[r.Key]
	unfiled := prev.unfiled || (!inOverlay && fileNone)
	if !durable && s.pendlog.put(r) {
		if st.overlay == nil {
			st.overlay = map[uuid.UUID]overlaid{}
		}
		st.overlay[r.Key] = overlaid{rec: r, unfiled: unfiled}
		return nil
	}
	buf := encBufs.Get().(*[]byte)
	enc := codec.Encode((*buf)[:0], r)
	err := s.commitPut(r, enc, unfiled)
	// The transaction is over: bbolt, which keeps a value only for the
	// transaction's life, and the cache (settle) are done with enc.
	if cap(enc) <= maxPooledEnc {
		*buf = enc
		encBufs.Put(buf)
	}
	if err != nil {
		if inOverlay && prev.unfiled {
			// A failed commit may still have reached the file (bbolt's
			// final fsync failed, say): no longer sure.
			prev.unfiled = false
			st.overlay[r.Key] = prev
		}
		return err
	}
	delete(st.overlay, r.Key)
	s.pendlog.drop(r.Key)
	return nil
}

// Begin decides what happens to an intent; see Store. It reads in one
// read transaction: under the key's lock when that is free, else first
// without it, which answers a live settled record without waiting for the
// lock.
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := machine.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	defer s.exit()

	st := s.stripe(req.Key)
	var now time.Time
	// A replay of a settled record in the cache is answered from it, as
	// from the file below (a settled record is replaced only under the
	// key's lock, by a durable write, which the cache follows).
	var hot journal.Record
	if hit, _, _ := st.cache.cached(req.Key, &hot); hit {
		now = s.now()
		if !journal.Expired(&hot, now) {
			if d := machine.DecideBegin(&hot, &req, now); d.Write == nil && d.Suppress == nil {
				return d.Result, nil
			}
		}
	}
	if !st.mu.TryLock() {
		// The key's stripe is busy (a commit may hold it for an fsync): the
		// replay path, without the lock. A live settled record in the file
		// is the truth: the overlay only ever holds pending records, and
		// only Retake (decided again below under the key's lock) replaces
		// a live settled record. When the stripe is free, the read under
		// the lock below answers a replay as well, and a new intent's
		// Begin reads in one transaction instead of two.
		var file journal.Record
		found, err := s.readFile(req.Key, &file)
		if err != nil {
			return journal.BeginResult{}, err
		}
		now = s.now()
		if found && file.State.Settled() && !journal.Expired(&file, now) {
			if d := machine.DecideBegin(&file, &req, now); d.Write == nil && d.Suppress == nil {
				return d.Result, nil
			}
			// A Retake or a mismatch to record: decide again under the lock.
		}
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	var cur *journal.Record
	var fileRec journal.Record // cur when the file's: on the stack, like a replay's read
	fileNone := false          // neither the overlay nor the file holds the key
	// The record and, when the decision asks it, the guard, in one read
	// transaction.
	var d machine.BeginDecision
	var g *journal.Record // the guard's answer, if guarded
	guarded := false      // the guard was asked with this decision
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		recs := tx.Bucket(bucketRecords) // opened once: the guard reads it too
		if o, ok := st.overlay[req.Key]; ok {
			cur = o.rec // read only, as in current
		} else {
			found, err := s.readIn(recs, req.Key, &fileRec)
			if err != nil {
				return err
			}
			if found {
				cur = &fileRec
			}
			fileNone = !found
		}
		now = s.now()
		d = machine.DecideBegin(cur, &req, now)
		if d.Guard && d.Suppress == nil {
			guarded = true
			g, err = s.guardIn(tx, recs, &req, now)
		}
		return err
	})
	if err != nil {
		return journal.BeginResult{}, err
	}
	var sst *stripe // the stripe of d.Suppress's key, locked too
	if d.Suppress != nil {
		if sst = s.stripe(d.Suppress.Key); sst != st {
			if d.Suppress.Key[0] < req.Key[0] {
				// Stripes are locked in index order, so that two
				// mismatches cannot deadlock; decide again once both are held.
				st.mu.Unlock()
				sst.mu.Lock()
				st.mu.Lock()
				if cur, err = s.current(st, req.Key); err != nil {
					sst.mu.Unlock()
					return journal.BeginResult{}, err
				}
				fileNone = false // not known this time: the file is read again at the write
				now = s.now()
				d = machine.DecideBegin(cur, &req, now)
			} else {
				sst.mu.Lock()
			}
			defer sst.mu.Unlock()
		}
	}
	if d.Guard {
		if !guarded {
			if g, err = s.guard(&req, now); err != nil {
				return journal.BeginResult{}, err
			}
		}
		if g != nil {
			return journal.BeginResult{Outcome: journal.Guarded, Record: *g}, nil
		}
	}
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
		if err := s.persist(st, d.Write, req.Durable || d.Durable, fileNone); err != nil {
			return journal.BeginResult{}, err
		}
	}
	return d.Result, nil
}

// guard returns a live suppressed record that blocks req, or nil: one
// read transaction over the guard index's entries for req's tenant,
// session and tool.
func (s *Store) guard(req *journal.BeginRequest, now time.Time) (found *journal.Record, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		found, err = s.guardTx(tx, req, now)
		return err
	})
	return found, err
}

// guardTx is guard within the read transaction tx.
func (s *Store) guardTx(tx *bbolt.Tx, req *journal.BeginRequest, now time.Time) (*journal.Record, error) {
	return s.guardIn(tx, tx.Bucket(bucketRecords), req, now)
}

// guardIn is guardTx with recs, tx's records bucket, already open.
func (s *Store) guardIn(tx *bbolt.Tx, recs *bbolt.Bucket, req *journal.BeginRequest, now time.Time) (*journal.Record, error) {
	var found *journal.Record
	err := func() error {
		check := func(v []byte) (bool, error) {
			r, err := codec.Decode(v)
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
				if ok, err := check(v); ok || err != nil {
					return wrapKey(s.path, k, err)
				}
			}
			return nil
		}
		if !s.maySuppress(req.Intent.Tool) {
			return nil
		}
		// The fresh bucket's suppressed records, which the guard index
		// does not hold yet: read from the bucket in place (a new call's
		// Begin asks the guard, and finds none there most of the time).
		if fresh := tx.Bucket(bucketFresh); fresh != nil {
			c := fresh.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(k) != 16 || len(v) != freshValueLen {
					return fmt.Errorf("journal %s: %w: fresh entry %x → %x", s.path, journal.ErrCorrupt, k, v)
				}
				if journal.State(v[0]) != journal.StateSuppressed {
					continue
				}
				if v := recs.Get(k); v != nil {
					if ok, err := check(v); ok || err != nil {
						return wrapKey(s.path, k, err)
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
				return fmt.Errorf("journal %s: %w", s.path, err)
			}
			if v := recs.Get(key[:]); v != nil {
				if ok, err := check(v); ok || err != nil {
					return wrapKey(s.path, key[:], err)
				}
			}
		}
		return nil
	}()
	return found, err
}

// toolSet is the set of tools that may have a suppressed record in the
// file (Store.suppressing). It is safe for concurrent use.
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
// whose counters count a suppressed record, or do not decode. Counters are
// one entry a tool, not a record, so this costs the same at ten records
// and at ten million.
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
// tool. When it cannot, no record can block a Begin of that tool
// (journal's guard asks for a suppressed record of the same tool), and the
// guard reads nothing: a new call's Begin reads its record and nothing
// else. The answer is from memory (s.suppressing), which says yes at
// least whenever the counters would: it is filled from them at open and
// every write of a suppressed record adds its tool before its transaction
// commits, so a read transaction that sees the record finds the tool in
// the set. A tool stays in the set until the store is reopened, even once
// its suppressed records are gone; its guard then reads the fresh entries
// and the index, as it would if the set said yes by mistake.
func (s *Store) maySuppress(tool string) bool { return s.suppressing.has(tool) }

// wrapKey names the file and the record key in err, if not nil.
func wrapKey(path string, key []byte, err error) error {
	if err == nil {
		return nil
	}
	if len(key) == 16 {
		return fmt.Errorf("journal %s: key %s: %w", path, uuid.UUID(key), err)
	}
	return fmt.Errorf("journal %s: key %x: %w", path, key, err)
}

// StartAttempt records a new attempt; see Store.
func (s *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	_, err := s.update(ctx, req.Key, "start attempt", req.Durable, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends the caller's lease; see Store. The renewed record goes to
// the overlay, never to the file: a renewal needs no fsync, because after a
// crash the lease ends anyway (the next open ends every lease it finds), so the
// lease in the file never needs to be the renewed one. The next durable
// write of the key, or Close, writes it.
func (s *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := machine.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := s.update(ctx, req.Key, "renew", false, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome durably; see Store.
func (s *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := machine.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	return s.update(ctx, c.Key, "complete", true, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyCompletion(cur, &c, now)
	})
}

// Resolve settles a pending or unknown record durably; see Store.
func (s *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	return s.update(ctx, key, "resolve", true, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyResolution(cur, res, now)
	})
}

// update applies fn to the newest record for key under the key's lock and
// persists the result.
func (s *Store) update(ctx context.Context, key uuid.UUID, op string, durable bool, fn func(*journal.Record, time.Time) (journal.Record, error)) (journal.Record, error) {
	if err := s.enter(ctx); err != nil {
		return journal.Record{}, err
	}
	defer s.exit()
	if s.readOnly {
		return journal.Record{}, fmt.Errorf("journal %s: %w: %s %s", s.path, journal.ErrReadOnly, op, key)
	}
	st := s.stripe(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	cur, err := s.current(st, key)
	if err != nil {
		return journal.Record{}, err
	}
	if cur == nil {
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrNotFound, op, key)
	}
	r, err := fn(cur, s.now())
	if err != nil {
		return journal.Record{}, err
	}
	if err := s.persist(st, &r, durable, false); err != nil {
		return journal.Record{}, err
	}
	return r, nil
}

// Get returns the newest record for key.
func (s *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if err := s.enter(ctx); err != nil {
		return journal.Record{}, err
	}
	defer s.exit()
	st := s.stripe(key)
	st.mu.Lock()
	o, ok := st.overlay[key]
	var c journal.Record
	if ok {
		c = *o.rec
	}
	st.mu.Unlock()
	if ok {
		return c, nil
	}
	var rec journal.Record
	found, err := s.readFile(key, &rec)
	if err != nil {
		return journal.Record{}, err
	}
	if !found {
		// Not fmt.Errorf: a new call's first read is a miss.
		return journal.Record{}, notFound(key)
	}
	return rec, nil
}

// notFound is ErrNotFound for key.
type notFound uuid.UUID

func (e notFound) Error() string { return journal.ErrNotFound.Error() + ": " + uuid.UUID(e).String() }
func (e notFound) Unwrap() error { return journal.ErrNotFound }

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

// listPage is how many records List reads per read transaction: it does
// not hold a transaction while the caller's loop body runs.
const listPage = 256

// List yields the records matching f, newest first. A Session filter reads
// that session's entries of the index, an unknown or pending State filter
// those of the 'u' index; anything else walks the creation-time index
// from the newest record down (from Until, to Since), reading records in
// pages of listPage, each in its own read transaction.
func (s *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		if err := s.enter(ctx); err != nil {
			yield(journal.Record{}, err)
			return
		}
		over := s.overlaySnapshot()
		// The fresh bucket's records are listed with the overlay's: the
		// index does not hold them yet. Only those whose fresh entry may
		// match f are read. skip leaves out of the index's pages every
		// record listed that way, should a write move it into the index
		// while List pages.
		skip := maps.Clone(over)
		err := s.view(func(tx *bbolt.Tx) error {
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
				if v := recs.Get(e.key[:]); v != nil {
					r, err := codec.Decode(v)
					if err != nil {
						return wrapKey(s.path, e.key[:], err)
					}
					s.endStale(&r)
					skip[e.key] = &r
				}
			}
			return nil
		})
		s.exit()
		if err != nil {
			yield(journal.Record{}, err)
			return
		}
		var extra []*journal.Record
		for _, r := range skip {
			if machine.MatchFilter(r, &f) {
				extra = append(extra, r)
			}
		}
		slices.SortFunc(extra, machine.NewerFirst)

		var next func(tx *bbolt.Tx) ([]*journal.Record, bool, error)
		var entries []*ixEntry
		listed := false // entries is the list to read (else walk the 'c' index)
		switch {
		case s.legacy:
			listed = true
		case f.Session != "" || f.State == journal.StateUnknown || f.State == journal.StatePending:
			listed = true
		}
		if listed {
			if err := s.enter(ctx); err != nil {
				yield(journal.Record{}, err)
				return
			}
			err := s.view(func(tx *bbolt.Tx) error {
				var err error
				switch {
				case s.legacy:
					entries, err = s.scanEntries(tx, &f)
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
				yield(journal.Record{}, err)
				return
			}
			next = func(tx *bbolt.Tx) ([]*journal.Record, bool, error) {
				chunk := entries[:min(len(entries), listPage)]
				entries = entries[len(chunk):]
				page, err := s.readPage(tx, chunk, &f, skip)
				return page, len(entries) == 0, err
			}
		} else {
			next = s.createdWalk(&f, skip)
		}

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
		v := recs.Get(e.key[:])
		if v == nil {
			continue // removed since the index was read
		}
		r, err := codec.Decode(v)
		if err != nil {
			return nil, fmt.Errorf("journal %s: key %s: %w", s.path, e.key, err)
		}
		s.endStale(&r)
		// The record may have changed since the index was read.
		if machine.MatchFilter(&r, f) {
			page = append(page, &r)
		}
	}
	return page, nil
}

// createdWalk returns List's pager over the time index: it walks it from
// the newest entry down (from Until's to Since's) and reads the records
// listPage at a time.
func (s *Store) createdWalk(f *journal.Filter, over map[uuid.UUID]*journal.Record) func(tx *bbolt.Tx) ([]*journal.Record, bool, error) {
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
			e, err := timeEntryOf(k)
			if err != nil {
				return nil, false, fmt.Errorf("journal %s: %w", s.path, err)
			}
			chunk = append(chunk, e)
			below = bytes.Clone(k)
		}
		page, err := s.readPage(tx, chunk, f, over)
		return page, done, err
	}
}

// DefaultGCBatch is how many records one GCBatch transaction removes when
// max is zero or less, and what GC removes per transaction.
const DefaultGCBatch = 256

// GC removes every expired record, walking the expiry index from its
// oldest entry to now in transactions of DefaultGCBatch (see GCBatch);
// see Store. Records still only in the overlay are left for Close to
// persist.
func (s *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if err := s.enter(ctx); err != nil {
		return journal.GCResult{}, err
	}
	if s.readOnly && !opts.DryRun {
		s.exit()
		return journal.GCResult{}, fmt.Errorf("journal %s: %w: gc", s.path, journal.ErrReadOnly)
	}
	now := s.now()
	over := s.overlaySnapshot()
	var res journal.GCResult
	err := s.view(func(tx *bbolt.Tx) error {
		if s.legacy {
			return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
				r, err := codec.Decode(v)
				if err != nil {
					return wrapKey(s.path, k, err)
				}
				if _, ok := over[r.Key]; !ok {
					if journal.Expired(&r, now) {
						res.Removed++
					} else if journal.Overdue(&r, now) {
						res.KeptUnknown++
					}
				}
				return nil
			})
		}
		ix := tx.Bucket(bucketIndex)
		res.KeptUnknown = countOpen(ix, journal.StateUnknown, now, over) + countOpen(ix, journal.StatePending, now, over)
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
		if journal.Overdue(r, now) {
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
// now, from the 'u' index, leaving out the keys of skip.
func countOpen(ix *bbolt.Bucket, st journal.State, now time.Time, skip map[uuid.UUID]*journal.Record) int {
	prefix := openPrefix(st)
	t := now.UnixNano()
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
// zero or less), the oldest first, in one transaction, and returns how
// many it removed: zero when none is expired. Unknown and pending records
// are never removed. The transaction is group-committed with the calls
// writing at the same time, so a background loop (call GCBatch until it
// returns zero, pause, repeat) costs each call at most one batch's pages.
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
			v := recs.Get(key[:])
			if v == nil {
				continue
			}
			r, err := codec.Decode(v)
			if err != nil {
				return fmt.Errorf("journal %s: key %s: %w", s.path, key, err)
			}
			if !journal.Expired(&r, now) { // checked again: the index says so, the record decides
				continue
			}
			if err := s.indexDelete(tx, key); err != nil {
				return err
			}
			removed++
		}
		return nil
	}, nil)
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// Stats counts the journal's records from the counters and indexes kept in
// the file, without reading records (a journal opened read-only before its
// migration is scanned instead). SizeBytes is the file's size.
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
		// The fresh bucket's records are in the counters, not yet in the
		// indexes that the other figures are read from.
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

// subStats takes r out of s, as addStats put it in. Oldest and Newest stay:
// r's key is in the overlay, whose record addStats counts next.
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
	if journal.Overdue(r, now) {
		s.OverdueUnknown--
	}
}

// Import writes r as it is, durably; see Store.
func (s *Store) Import(ctx context.Context, r journal.Record) error {
	if err := machine.ValidateImport(&r); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.exit()
	st := s.stripe(r.Key)
	st.mu.Lock()
	defer st.mu.Unlock()
	cur, err := s.current(st, r.Key)
	if err != nil {
		return err
	}
	if cur != nil {
		r.Version = journal.SchemaVersion
		if machine.EqualRecords(cur, &r) {
			return nil
		}
		return fmt.Errorf("journal %s: %w: %s", s.path, journal.ErrExists, r.Key)
	}
	if s.readOnly {
		return fmt.Errorf("journal %s: %w: import %s", s.path, journal.ErrReadOnly, r.Key)
	}
	return s.persist(st, &r, true, false)
}

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
	recs := make([]*journal.Record, 0, len(over))
	for _, r := range over {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *journal.Record) int { return machine.CompareKeys(a.Key, b.Key) })
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

// LocalReads reports that a read of this store costs about a microsecond (a
// memory-mapped file), less than joining a flight: the harness then answers
// a re-issued settled call by one read before anything else.
func (s *Store) LocalReads() bool { return true }
