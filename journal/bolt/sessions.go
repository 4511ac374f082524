// Reading the persisted indexes for List, and the scans that stand in for
// them on a layout-1 journal opened read-only (which cannot be migrated).

package bolt

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// sessionEntries lists the records of session newest first, as entries
// that carry the key and the creation time: the caller reads the records
// and keeps those that match (other tenants', or a session whose name
// hashes alike, do not). It reads one range of the session index.
func (s *Store) sessionEntries(tx *bbolt.Tx, session string) ([]*ixEntry, error) {
	h := sessionHash(session)
	prefix := append([]byte{pfxSession}, h[:]...)
	var out []*ixEntry
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != sessionKeyLen {
			return nil, fmt.Errorf("journal %s: %w: session index entry %x", s.path, journal.ErrCorrupt, k)
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
		return machine.CompareKeys(b.key, a.key)
	})
}

// scanEntries lists every record matching f, newest first, by reading them
// all: List on a layout-1 journal opened read-only.
func (s *Store) scanEntries(tx *bbolt.Tx, f *journal.Filter) ([]*ixEntry, error) {
	var out []*ixEntry
	err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
		r, err := codec.Decode(v)
		if err != nil {
			return fmt.Errorf("journal %s: key %x: %w", s.path, k, err)
		}
		if machine.MatchFilter(&r, f) {
			out = append(out, &ixEntry{key: r.Key, created: nanos(r.Created)})
		}
		return nil
	})
	sortNewestFirst(out)
	return out, err
}
