package journal

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// The bbolt file holds three buckets:
//
//	meta     "version" → schema version (uvarint), "namespace" → 16 bytes
//	records  key (16 bytes) → encoded record
//	index    index entries → empty values
//
// Every index entry starts with one byte naming the index and ends with the
// record's key, so that one record's entries are unique and a scan yields
// keys without reading records:
//
//	's' len session  created  key   List by session (and turn, filtered)
//	'o' len tool     created  key   List by tool
//	'S' state        created  key   List by state
//	'c' created      key            List by time, or everything
//	'e' gcAt         key            GC: expired first
//	'g' len tenant len session len tool len turn  key
//	                                suppressed records only: the guard
//
// Times are 8 bytes big-endian, Unix nanoseconds with the sign bit flipped
// so that byte order is time order. The entries of a record are rewritten
// in the same transaction as the record (see putRecord), so an index never
// disagrees with the records it points to.
var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records")
	bucketIndex   = []byte("index")

	metaVersion   = []byte("version")
	metaNamespace = []byte("namespace")
)

const (
	ixSession = 's'
	ixTool    = 'o'
	ixState   = 'S'
	ixCreated = 'c'
	ixExpiry  = 'e'
	ixGuard   = 'g'
)

func appendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixNano())^(1<<63))
}

func appendLP(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// indexKeys returns r's index entries.
func indexKeys(r *Record) [][]byte {
	keys := make([][]byte, 0, 6)
	in := &r.Intent
	// One allocation for all the entries.
	buf := make([]byte, 0, 5*(1+8+16)+len(in.Session)+len(in.Tool)+4+1+
		2*(len(in.Tenant)+len(in.Session)+len(in.Tool)+len(in.Turn)+8+16))
	add := func(start int) {
		buf = append(buf, r.Key[:]...)
		keys = append(keys, buf[start:len(buf):len(buf)])
	}
	start := len(buf)
	buf = append(buf, ixSession)
	buf = appendLP(buf, in.Session)
	buf = appendTime(buf, r.Created)
	add(start)

	start = len(buf)
	buf = append(buf, ixTool)
	buf = appendLP(buf, in.Tool)
	buf = appendTime(buf, r.Created)
	add(start)

	start = len(buf)
	buf = append(buf, ixState, byte(r.State))
	buf = appendTime(buf, r.Created)
	add(start)

	start = len(buf)
	buf = append(buf, ixCreated)
	buf = appendTime(buf, r.Created)
	add(start)

	start = len(buf)
	buf = append(buf, ixExpiry)
	buf = appendTime(buf, gcAt(r))
	add(start)

	if r.State == StateSuppressed {
		start = len(buf)
		buf = append(buf, ixGuard)
		buf = appendLP(buf, in.Tenant)
		buf = appendLP(buf, in.Session)
		buf = appendLP(buf, in.Tool)
		buf = appendLP(buf, in.Turn)
		add(start)
	}
	return keys
}

// guardPrefix is the prefix of the guard entries that block req.
func guardPrefix(req *BeginRequest) []byte {
	in := &req.Intent
	b := []byte{ixGuard}
	b = appendLP(b, in.Tenant)
	b = appendLP(b, in.Session)
	b = appendLP(b, in.Tool)
	if req.Guard == GuardTurn {
		b = appendLP(b, in.Turn)
	}
	return b
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// putRecord writes r and rewrites its index entries, reading the record it
// replaces inside tx. It is idempotent, so a group commit may run it again.
func putRecord(tx *bolt.Tx, r *Record, enc []byte) error {
	recs, ix := tx.Bucket(bucketRecords), tx.Bucket(bucketIndex)
	var oldKeys [][]byte
	if old := recs.Get(r.Key[:]); old != nil {
		o, err := decodeRecord(old)
		if err != nil {
			return err
		}
		oldKeys = indexKeys(&o)
	}
	newKeys := indexKeys(r)
	for _, k := range oldKeys {
		if !containsKey(newKeys, k) {
			if err := ix.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range newKeys {
		if !containsKey(oldKeys, k) {
			if err := ix.Put(k, nil); err != nil {
				return err
			}
		}
	}
	return recs.Put(r.Key[:], enc)
}

// deleteRecord removes the record for key and its index entries.
func deleteRecord(tx *bolt.Tx, key uuid.UUID) error {
	recs, ix := tx.Bucket(bucketRecords), tx.Bucket(bucketIndex)
	old := recs.Get(key[:])
	if old == nil {
		return nil
	}
	o, err := decodeRecord(old)
	if err != nil {
		return err
	}
	for _, k := range indexKeys(&o) {
		if err := ix.Delete(k); err != nil {
			return err
		}
	}
	return recs.Delete(key[:])
}

// keyOf returns the record key that ends an index entry.
func keyOf(entry []byte) uuid.UUID {
	return uuid.UUID(entry[len(entry)-16:])
}
