// Migrating a journal of layout 1 to layout 2 (indexes in the file), by
// the first writer's open, in transactions of migrateBatch records that
// each record how far they got (metaMigrating); the first sets the layout
// version, so that an older binary refuses the file. A crash leaves
// indexes covering the records up to metaMigrating; the next open goes on.

package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal/internal/codec"
)

// layoutVersion is the file layout this package writes (meta "version");
// records carry their own format byte (SchemaVersion).
const layoutVersion = 2

// The layout-1 session index, dropped by the migration.
var (
	bucketSessions    = []byte("sessions")
	metaSessionsClean = []byte("sessions-clean")
)

// migrateBatch is how many records one migration transaction indexes.
var migrateBatch = 10000

// migrateHook, a test seam, runs after each migration transaction.
var migrateHook func(done int)

// migrate builds the indexes of a journal that lacks them, or finishes a
// migration that a crash interrupted.
func (s *Store) migrate() error {
	if !s.legacy {
		return nil
	}
	err := s.writeTx(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v, _ := binary.Uvarint(meta.Get(metaVersion)); v == layoutVersion && meta.Get(metaMigrating) != nil &&
			tx.Bucket(bucketIndex) != nil && tx.Bucket(bucketCounts) != nil && tx.Bucket(bucketFresh) != nil {
			return nil // resuming
		}
		for _, b := range [][]byte{bucketIndex, bucketCounts, bucketFresh, bucketSessions} {
			if tx.Bucket(b) != nil {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
		}
		for _, b := range [][]byte{bucketIndex, bucketCounts, bucketFresh} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return firstErr(meta.Delete(metaSessionsClean),
			meta.Put(metaVersion, binary.AppendUvarint(nil, layoutVersion)),
			meta.Put(metaMigrating, []byte{}))
	})
	done := 0
	for finished := false; err == nil && !finished; {
		err = s.writeTx(func(tx *bbolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			last := meta.Get(metaMigrating)
			c := tx.Bucket(bucketRecords).Cursor()
			k, v := c.First()
			if len(last) > 0 {
				if k, v = c.Seek(last); k != nil && bytes.Equal(k, last) {
					k, v = c.Next()
				}
			}
			var at []byte
			for n := 0; k != nil && n < migrateBatch; n++ {
				r, err := codec.Decode(v)
				if err != nil {
					return wrapKey(s.path, k, err)
				}
				var e ixEntry
				e.set(&r)
				if err := firstErr(recount(nil, tx.Bucket(bucketCounts), nil, &e), reindex(nil, tx.Bucket(bucketIndex), nil, &e)); err != nil {
					return err
				}
				at = k
				k, v = c.Next()
			}
			if k == nil {
				finished = true
				return meta.Delete(metaMigrating)
			}
			return meta.Put(metaMigrating, bytes.Clone(at))
		})
		if err == nil && migrateHook != nil {
			done += migrateBatch
			migrateHook(done)
		}
	}
	if err != nil {
		return fmt.Errorf("journal %s: building the indexes of a layout-1 journal: %w", s.path, err)
	}
	s.legacy = false
	return nil
}
