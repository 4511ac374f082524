// Reading the persisted indexes for List, and the scans that stand in for
// them on a layout-1 journal opened read-only (which cannot be migrated).

package journal

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// sessionEntries lists the records of session newest first, as entries
// that carry the key and the creation time: the caller reads the records
// and keeps those that match (other tenants', or a session whose name
// hashes alike, do not). It reads one range of the session index.
func (s *BoltStore) sessionEntries(tx *bolt.Tx, session string) ([]*ixEntry, error) {
	prefix := append([]byte{pfxSession}, sessionHash(session)...)
	var out []*ixEntry
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != sessionKeyLen {
			return nil, fmt.Errorf("journal %s: %w: session index entry %x", s.path, ErrCorrupt, k)
		}
		out = append(out, &ixEntry{created: readTime(k[9:17]), key: uuid.UUID(k[17:])})
	}
	slices.Reverse(out) // the range ascends by creation time, then key
	return out, nil
}

// sortNewestFirst orders entries as List yields records: newest first, then
// by key, descending.
func sortNewestFirst(out []*ixEntry) {
	slices.SortFunc(out, func(a, b *ixEntry) int {
		if a.created != b.created {
			if a.created > b.created {
				return -1
			}
			return 1
		}
		return compareKeys(b.key, a.key)
	})
}

// scanEntries lists every record matching f, newest first, by reading them
// all: List on a layout-1 journal opened read-only.
func (s *BoltStore) scanEntries(tx *bolt.Tx, f *Filter) ([]*ixEntry, error) {
	var out []*ixEntry
	err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		r, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("journal %s: key %x: %w", s.path, k, err)
		}
		if matchFilter(&r, f) {
			out = append(out, &ixEntry{key: r.Key, created: nanos(r.Created)})
		}
		return nil
	})
	sortNewestFirst(out)
	return out, err
}
