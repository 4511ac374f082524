package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentonce/agentonce/journal"
)

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
		opts:     o,
		clock:    clk,
		readOnly: jo.ReadOnly,
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
	st := s
	defer func() {
		// bbolt can panic (or fault on the mapped file) on damaged pages.
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("journal %s: %w: %v", path, journal.ErrCorrupt, p)
		}
		if err != nil && st.db != nil {
			_ = st.db.Close()
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	if s.db, err = openBolt(path, &bbolt.Options{Timeout: o.LockTimeout, ReadOnly: jo.ReadOnly, FreelistType: bbolt.FreelistMapType}); err != nil {
		return nil, err
	}
	if err := s.checkFile(jo.Namespace); err != nil {
		return nil, err
	}
	if !jo.ReadOnly {
		if err := s.migrate(); err != nil {
			return nil, err
		}
	}
	opened, err := s.startClock()
	if err != nil {
		return nil, fmt.Errorf("journal %s: starting the clock: %w", path, err)
	}
	s.pendlog = newPendingLog(path)
	if !jo.ReadOnly {
		s.leasesEnded = opened
		err = s.recoverPending()
	} else {
		err = s.loadPending()
	}
	if err == nil {
		err = s.loadSuppressing()
	}
	if err != nil {
		return nil, err
	}
	return s, nil
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
	create, addSum := false, false
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
		sum := meta.Get(metaNamespaceSum)
		if sum != nil && !bytes.Equal(sum, nsSum(s.ns)) {
			return fmt.Errorf("journal %s: %w: the namespace does not match its checksum (every key would change); restore the journal from a backup", s.path, journal.ErrCorrupt)
		}
		addSum = sum == nil && !s.readOnly
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
	if err := s.db.View(check); err != nil {
		return err
	}
	if create || addSum { // addSum: once, in a journal written before the checksum
		err := s.db.Update(func(tx *bbolt.Tx) error {
			if create {
				return s.create(tx, ns)
			}
			return tx.Bucket(bucketMeta).Put(metaNamespaceSum, nsSum(s.ns))
		})
		if err != nil || create {
			return err
		}
	}
	if fi.Size() > treeCheckMax || s.readOnly { // a reader starts no intent, and may export what reads
		return nil
	}
	return s.checkTree()
}

func nsSum(ns uuid.UUID) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(ns[:], crc32.MakeTable(crc32.Castagnoli)))
}

// create makes the buckets of a new journal in tx, under namespace ns (a
// new one when ns is Nil).
func (s *Store) create(tx *bbolt.Tx, ns uuid.UUID) error {
	if ns == uuid.Nil {
		ns = uuid.New()
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := firstErr(meta.Put(metaVersion, binary.AppendUvarint(nil, layoutVersion)), meta.Put(metaNamespace, ns[:]), meta.Put(metaNamespaceSum, nsSum(ns))); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketRecords, bucketIndex, bucketCounts, bucketFresh} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	s.ns = ns
	return nil
}

// endStale ends, as of the open, the lease of pending r when it was last
// written before the open: the file lock says its owner has stopped, and
// a restarted agent must not find its own intents "in flight elsewhere".
// Nothing is written: the record's next write keeps the ended lease.
func (s *Store) endStale(r *journal.Record) {
	if r.State == journal.StatePending && r.Updated.Before(s.leasesEnded) && r.Lease.Expires.After(s.leasesEnded) {
		r.Lease.Expires = s.leasesEnded
	}
}
