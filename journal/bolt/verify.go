package bolt

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// Verify reads every record of the bbolt journal at path, checking its
// checksum and decoding it, and calls damaged for each one that does not
// read: with its key (uuid.Nil when the stored key is not 16 bytes) and an
// error wrapping ErrCorrupt, or ErrNewerVersion, that says what is wrong.
// It returns how many records it read; a damaged one does not stop the
// scan, and the indexes are not checked.
//
// It opens the file read-only, waiting up to opts.LockTimeout (default 1s),
// and fails as Open does when the file is not a journal, is truncated, or
// stays locked. A record written before checksums is decoded unchecked.
func Verify(ctx context.Context, path string, opts *Options, damaged func(key uuid.UUID, err error)) (n int, err error) {
	wait := time.Second
	if opts != nil && opts.LockTimeout > 0 {
		wait = opts.LockTimeout
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("open journal: %w", err)
	}
	if fi.Size() == 0 {
		return 0, fmt.Errorf("journal %s: %w: empty file", path, journal.ErrCorrupt)
	}
	db, err := openBolt(path, &bbolt.Options{Timeout: wait, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	s := &Store{path: path, db: db} // its view turns bbolt's panics and faults on damaged pages into ErrCorrupt
	err = s.view(func(tx *bbolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		if tx.Bucket(bucketMeta) == nil || recs == nil {
			return fmt.Errorf("journal %s: %w: a bbolt file without the journal's buckets", path, journal.ErrCorrupt)
		}
		c := recs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n++
			if _, err := decodeStored(k, v); err != nil {
				key, _ := uuid.FromBytes(k)
				damaged(key, err)
			}
		}
		return nil
	})
	return n, err
}

// decodeStored decodes the value v stored under key k in the records
// bucket and checks that the record is the key's: a damaged key or leaf
// can put another record's value under a key.
func decodeStored(k, v []byte) (journal.Record, error) {
	switch {
	case len(k) != 16:
		return journal.Record{}, fmt.Errorf("%w: stored key %x is %d bytes, not 16", journal.ErrCorrupt, clip(k), len(k))
	case v == nil:
		return journal.Record{}, fmt.Errorf("%w: a bucket where a record should be", journal.ErrCorrupt)
	}
	r, err := codec.Decode(v)
	if err == nil && r.Key != uuid.UUID(k) {
		err = fmt.Errorf("%w: the record stored under this key is record %s", journal.ErrCorrupt, r.Key)
	}
	return r, err
}

// treeCheckMax is the largest file whose tree a writer's open checks
// (about 1 ms a MiB, BENCHMARKS.md); a Begin that finds no record checks
// the indexes (Store.recorded) whatever the size. A variable for tests.
var treeCheckMax int64 = 8 << 20

// checkTree refuses a file with a damaged key or page, which could hide a
// record from a Begin: in every bucket the keys must ascend, and each
// record that decodes must be stored under its own key (a damaged value
// is left to the reads that meet it).
func (s *Store) checkTree() error {
	return s.view(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			records := string(name) == string(bucketRecords)
			var prev []byte
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				var what string
				switch {
				case prev != nil && bytes.Compare(prev, k) >= 0:
					what = fmt.Sprintf("key %x follows key %x", clip(k), clip(prev))
				case records && len(k) != 16:
					what = fmt.Sprintf("key %x is %d bytes, not 16", clip(k), len(k))
				case records && v != nil:
					if r, err := codec.Decode(v); err == nil && r.Key != uuid.UUID(k) {
						what = fmt.Sprintf("key %x holds record %s", clip(k), r.Key)
					}
				}
				if what != "" {
					return fmt.Errorf("journal %s: %w: bucket %s: %s (a damaged page: agentctl verify lists the damaged records; restore the journal from a backup or an export)",
						s.path, journal.ErrCorrupt, name, what)
				}
				prev = k
			}
			return nil
		})
	})
}
