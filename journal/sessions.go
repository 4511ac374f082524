// Reading the persisted indexes for List, and the scans that stand in for
// them on a layout-1 journal opened read-only (which cannot be migrated).

package journal

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// sessionEntries lists the records of session newest first, as entries
// that carry the key and the creation time: the caller reads the records
// and keeps those that match (other tenants', or a session whose name
// hashes alike, do not). It seeks the session in every slot of the time
// index that holds records.
func (s *BoltStore) sessionEntries(tx *bolt.Tx, session string) ([]*ixEntry, error) {
	h := sessionHash(session)
	var out []*ixEntry
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek([]byte{pfxTime}); k != nil && k[0] == pfxTime; {
		if len(k) != timeKeyLen {
			return nil, fmt.Errorf("journal %s: %w: time index key of %d bytes", s.path, ErrCorrupt, len(k))
		}
		slot := readTime(k[1:9])
		prefix := append(slotPrefix(slot), h...)
		for k, _ = c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			e, err := timeEntryOf(k)
			if err != nil {
				return nil, fmt.Errorf("journal %s: %w", s.path, err)
			}
			out = append(out, e)
		}
		if slot == never {
			break
		}
		k, _ = c.Seek(slotPrefix(slot + 1))
	}
	sortNewestFirst(out)
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
