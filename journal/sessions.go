// The session index kept in the file, so that inspection of one session
// (agentctl ls --session) costs what the session holds rather than what the
// journal holds. It adds no page to any commit: changes are logged in
// memory while the journal is open and written once, by Close. A read-only
// open of a complete journal lists a session from this bucket and reads
// only that session's records; any other query (List without a session,
// Stats, GC) reads every record once, into the in-memory index. After a
// crash the sessions-clean flag stays cleared, readers read everything, and
// the next writer's open rebuilds the bucket.

package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// The persisted session index.
//
// A writing BoltStore keeps its indexes in memory, built at open: index
// buckets would dirty more pages on every commit (each costs fsync time).
// But an inspection (agentctl ls --session) of a large journal should not
// read every record to find one session's. So the session index is also
// kept in the file, in the sessions bucket, and brought up to date once, at
// Close, from a log of the changes made while the journal was open. The
// meta key sessions-clean says whether it is complete: it is cleared when a
// writer opens the journal and set again by its Close. A read-only open of
// a clean journal reads no record up front; it lists a session from the
// bucket and builds the in-memory index only for a query that needs it. A
// writer that finds the flag cleared (a crash) rebuilds the bucket.
var (
	bucketSessions    = []byte("sessions")
	metaSessionsClean = []byte("sessions-clean")
)

// maxSessionLog bounds the change log kept in memory while a journal is
// open; past it, Close rebuilds the bucket instead of replaying the log.
// A variable so that tests can reach the rebuild.
var maxSessionLog = 1 << 17

// sessionOp is one change to the session index: add or remove k.
type sessionOp struct {
	add bool
	k   []byte
}

// sessionKey orders a session's records by creation time: the session and
// tenant, length-prefixed, then the creation time (sign bit flipped, so that
// it sorts as a signed number) and the record key.
func sessionKey(session, tenant string, created int64, key uuid.UUID) []byte {
	b := sessionPrefix(session, tenant, true)
	b = binary.BigEndian.AppendUint64(b, uint64(created)^(1<<63))
	return append(b, key[:]...)
}

// sessionPrefix is the key prefix of a session's entries, of one tenant's
// or (withTenant false) of every tenant's.
func sessionPrefix(session, tenant string, withTenant bool) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(session)+len(tenant)+24)
	b = binary.AppendUvarint(b, uint64(len(session)))
	b = append(b, session...)
	if withTenant {
		b = binary.AppendUvarint(b, uint64(len(tenant)))
		b = append(b, tenant...)
	}
	return b
}

// prepareSessions readies the session index for a writer: rebuilt from the
// in-memory index unless the last writer left it complete, then marked
// incomplete until Close.
func (s *BoltStore) prepareSessions() error {
	var clean bool
	err := s.view(func(tx *bolt.Tx) error {
		clean = tx.Bucket(bucketSessions) != nil &&
			bytes.Equal(tx.Bucket(bucketMeta).Get(metaSessionsClean), []byte{1})
		return nil
	})
	if err == nil && !clean {
		err = s.rebuildSessions(false)
	}
	if err == nil {
		err = s.writeTx(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaSessionsClean, []byte{0}) })
	}
	if err != nil {
		return fmt.Errorf("journal %s: preparing the session index: %w", s.path, err)
	}
	s.ix.mu.Lock()
	s.ix.track = true
	s.ix.mu.Unlock()
	return nil
}

// rebuildTxEntries bounds the entries one rebuild transaction writes.
const rebuildTxEntries = 50000

// rebuildSessions writes the session index afresh from the in-memory one,
// in key order (bbolt splits nodes only at commit, so inserts in random
// order into one transaction cost quadratic time) and in transactions of
// rebuildTxEntries; the last one marks the index complete when asked.
func (s *BoltStore) rebuildSessions(markClean bool) error {
	s.ix.mu.RLock()
	keys := make([][]byte, 0, len(s.ix.byKey))
	for _, e := range s.ix.byKey {
		keys = append(keys, sessionKey(e.session, e.tenant, e.created, e.key))
	}
	s.ix.mu.RUnlock()
	slices.SortFunc(keys, bytes.Compare)
	first := true
	for first || len(keys) > 0 {
		chunk := keys[:min(len(keys), rebuildTxEntries)]
		keys = keys[len(chunk):]
		last := len(keys) == 0
		err := s.writeTx(func(tx *bolt.Tx) error {
			if first && tx.Bucket(bucketSessions) != nil {
				if err := tx.DeleteBucket(bucketSessions); err != nil {
					return err
				}
			}
			b, err := tx.CreateBucketIfNotExists(bucketSessions)
			if err != nil {
				return err
			}
			b.FillPercent = 1.0 // appended in order
			for _, k := range chunk {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
			if last && markClean {
				return tx.Bucket(bucketMeta).Put(metaSessionsClean, []byte{1})
			}
			return nil
		})
		if err != nil {
			return err
		}
		first = false
	}
	return nil
}

// saveSessions brings the session index up to date and marks it complete.
// Close calls it after the last write.
func (s *BoltStore) saveSessions() error {
	s.ix.mu.Lock()
	log, overflow := s.ix.log, s.ix.overflow
	s.ix.log, s.ix.overflow, s.ix.track = nil, false, false
	s.ix.mu.Unlock()
	if overflow {
		return s.rebuildSessions(true)
	}
	// The log's net effect, applied in key order (see rebuildSessions).
	net := make(map[string]bool, len(log))
	for _, op := range log {
		net[string(op.k)] = op.add
	}
	keys := make([]string, 0, len(net))
	for k := range net {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return s.writeTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		for _, k := range keys {
			var err error
			if net[k] {
				err = b.Put([]byte(k), nil)
			} else {
				err = b.Delete([]byte(k))
			}
			if err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaSessionsClean, []byte{1})
	})
}

// sessionEntries lists, from the persisted index, the records of session
// (and tenant, when given) newest first, as index entries that carry only
// the key and the creation time: the caller reads and filters the records.
func (s *BoltStore) sessionEntries(session, tenant string) ([]*ixEntry, error) {
	prefix := sessionPrefix(session, tenant, tenant != "")
	var out []*ixEntry
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSessions).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) < 24 {
				return fmt.Errorf("%w: session index key of %d bytes", ErrCorrupt, len(k))
			}
			tail := k[len(k)-24:]
			e := &ixEntry{created: int64(binary.BigEndian.Uint64(tail[:8]) ^ (1 << 63))}
			copy(e.key[:], tail[8:])
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal %s: session index: %w", s.path, err)
	}
	sortNewestFirst(out)
	return out, nil
}

// ensureIndex builds the in-memory index of a read-only store opened
// without it, the first time a query needs it.
func (s *BoltStore) ensureIndex() error {
	if !s.lazy {
		return nil
	}
	s.lazyOnce.Do(func() {
		s.lazyErr = s.view(func(tx *bolt.Tx) error { return s.loadIndex(tx) })
	})
	return s.lazyErr
}

// loadIndex reads every record into the in-memory index, proving that each
// one decodes (and that bbolt can walk every page of the bucket).
func (s *BoltStore) loadIndex(tx *bolt.Tx) error {
	return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		if err := s.ix.load(v); err != nil {
			return fmt.Errorf("journal %s: key %x: %w", s.path, k, err)
		}
		return nil
	})
}
