package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// BulkPut writes records in one transaction per 10 000, for tests and
// benchmarks that need big journals fast.
func BulkPut(s *Store, recs []journal.Record) error {
	for len(recs) > 0 {
		n := min(len(recs), 10000)
		chunk := recs[:n]
		recs = recs[n:]
		err := s.db.Update(func(tx *bbolt.Tx) error {
			for i := range chunk {
				r := &chunk[i]
				if err := s.indexPut(tx, r, codec.Encode(nil, r), false); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	s.dropCache() // written past writeTx
	return nil
}

// FileRecord reads key's record from the file, past the cache.
func FileRecord(s *Store, key uuid.UUID) (r journal.Record, found bool, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		found, err = s.readIn(tx.Bucket(bucketRecords), key, &r)
		return err
	})
	return r, found, err
}

// SetReadHook sets the hook run between a cache miss's read of the file
// and its fill; nil removes it.
func SetReadHook(fn func(key uuid.UUID)) { testHookRead = fn }

// Cached reports whether key's record is in the cache.
func Cached(s *Store, key uuid.UUID) bool {
	c := &s.stripes[key[0]].cache
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[key]
	return ok
}

// PagesWritten is how many pages the store's commits have written.
func PagesWritten(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}

// FreshKeys is how many records the fresh bucket holds.
func FreshKeys(s *Store) int {
	n := 0
	s.db.View(func(tx *bbolt.Tx) error {
		n = countKeys(tx.Bucket(bucketFresh))
		return nil
	})
	return n
}

// BoltStats is the bytes of the pages in use.
func BoltStats(s *Store) int64 {
	var n int64
	s.db.View(func(tx *bbolt.Tx) error {
		st := s.db.Stats()
		n = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(s.db.Info().PageSize)
		return nil
	})
	return n
}

// SetMigrateBatch sets how many records one migration transaction
// indexes, and a hook run after each, for a test.
func SetMigrateBatch(n int, hook func(done int)) (restore func()) {
	oldN, oldHook := migrateBatch, migrateHook
	migrateBatch, migrateHook = n, hook
	return func() { migrateBatch, migrateHook = oldN, oldHook }
}

// Legacy reports that a store reads every record for its queries: a
// layout-1 journal opened read-only.
func Legacy(s *Store) bool { return s.legacy }

// SetNoSync turns fsync off (or on again) for a test that builds a big
// journal fast.
func SetNoSync(s *Store, on bool) { s.db.NoSync = on }

// IndexRoot is the page id of the index bucket's root: it changes with
// every commit that writes an index entry.
func IndexRoot(s *Store) uint64 {
	var root uint64
	s.db.View(func(tx *bbolt.Tx) error {
		root = uint64(tx.Bucket(bucketIndex).Root())
		return nil
	})
	return root
}

// FreshMax is how many records the fresh bucket holds before a flush.
const FreshMax = freshMax

// CreateBolt is createBolt, for the race test.
var CreateBolt = createBolt

// EncodeRecord and DecodeRecord are journal's record encoding, for tests.
var (
	EncodeRecord = codec.Encode
	DecodeRecord = codec.Decode
)

// EncodeLegacyRecord encodes r as a version without checksums wrote it:
// the format byte, then the fields, without the 7-byte seal (tag, length
// and CRC-32C) that follows the format byte today.
func EncodeLegacyRecord(r *journal.Record) []byte {
	const sealLen = 7
	v := codec.Encode(nil, r)
	return append(v[:1:1], v[sealLen:]...)
}

// FixPendingCRC recomputes the CRC of the first frame of the pending log b,
// for a test that damages a record behind a valid CRC.
func FixPendingCRC(b []byte) {
	f := b[len(pendingMagic):]
	n := binary.BigEndian.Uint32(f[0:4])
	binary.BigEndian.PutUint32(f[4:8], crc32.Checksum(f[8:8+n], crcTable))
}

// HoldStripe locks the stripe of key, as a call deciding about a key of
// that stripe does, until the returned func is called.
func HoldStripe(s *Store, key [16]byte) (release func()) {
	st := s.stripe(key)
	st.mu.Lock()
	return st.mu.Unlock
}

// ReadTxs is how many read transactions the store has begun.
func ReadTxs(s *Store) int { return s.db.Stats().TxN }

// IndexMismatch compares the index bucket with the entries each record
// gives (entryOf, as a write computes them), leaving out the records of the
// fresh bucket, which have none, and returns the first difference, or "".
func IndexMismatch(s *Store) string {
	var out string
	s.db.View(func(tx *bbolt.Tx) error {
		fresh, recs, ix := tx.Bucket(bucketFresh), tx.Bucket(bucketRecords), tx.Bucket(bucketIndex)
		want := map[string]string{}
		err := recs.ForEach(func(k, v []byte) error {
			if fresh.Get(k) != nil {
				return nil
			}
			r, err := codec.Decode(v)
			if err != nil {
				return err
			}
			var e ixEntry
			e.set(&r)
			l := e.entries(nil)
			for _, kv := range l.list() {
				want[string(kv.k)] = string(kv.v)
			}
			return nil
		})
		if err != nil {
			out = err.Error()
			return nil
		}
		n := 0
		ix.ForEach(func(k, v []byte) error {
			n++
			if w, ok := want[string(k)]; !ok || w != string(v) {
				out = fmt.Sprintf("index entry %x → %x: want %v (%x)", k, v, ok, w)
			}
			return nil
		})
		if out == "" && n != len(want) {
			out = fmt.Sprintf("index holds %d entries; the records give %d", n, len(want))
		}
		return nil
	})
	return out
}

// Groups is how many group commits the store ran and how many writes they
// held.
func Groups(s *Store) (groups, writes int64) { return s.groups.Load(), s.grouped.Load() }

// dropCache empties the cache, after a write that did not go through
// writeTx (the tests' bulk loader).
func (s *Store) dropCache() {
	for i := range s.stripes {
		c := &s.stripes[i].cache
		c.mu.Lock()
		clear(c.m)
		c.gen++
		c.mu.Unlock()
	}
}

// SkipFileCheck turns off the freelist check made before bbolt.Open until
// the test ends, so that the test reaches the panic it prevents.
func SkipFileCheck(t interface{ Cleanup(func()) }) {
	testSkipFileCheck = true
	t.Cleanup(func() { testSkipFileCheck = false })
}

// MetaFreelist is the freelist page id named by the meta page at off in a
// bbolt file's bytes.
func MetaFreelist(b []byte, off int) uint64 {
	return binary.NativeEndian.Uint64(b[off+boltPageHeader+boltMetaFreeOff:])
}

// PendingLogRecords reads s's pending log as an open would.
func PendingLogRecords(s *Store) ([]*journal.Record, error) { return readPendingLog(s.pendlog.path) }

// SetTreeCheckMax sets the largest file whose tree an open checks (-1:
// none) until the test ends.
func SetTreeCheckMax(t interface{ Cleanup(func()) }, n int64) {
	old := treeCheckMax
	treeCheckMax = n
	t.Cleanup(func() { treeCheckMax = old })
}

// CheckTree runs the open's tree check on s.
func CheckTree(s *Store) error { return s.checkTree() }
