package journal

import bolt "go.etcd.io/bbolt"

// BulkPut writes records in one transaction per 10 000, for tests and
// benchmarks that need big journals fast.
func BulkPut(s *BoltStore, recs []Record) error {
	for len(recs) > 0 {
		n := min(len(recs), 10000)
		chunk := recs[:n]
		recs = recs[n:]
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i := range chunk {
				r := &chunk[i]
				if err := tx.Bucket(bucketRecords).Put(r.Key[:], encodeRecord(nil, r)); err != nil {
					return err
				}
				s.ix.put(r)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// EncodeRecord, DecodeRecord and Seal expose the record encoding to tests.
var (
	EncodeRecord = encodeRecord
	DecodeRecord = decodeRecord
	Seal         = seal
)

// EncodeLegacyRecord encodes r as a version without checksums wrote it.
func EncodeLegacyRecord(r *Record) []byte {
	v := encodeRecord(nil, r)
	return append(v[:1:1], v[sealLen:]...)
}

// BoltStats is the bytes of the pages in use.
func BoltStats(s *BoltStore) int64 {
	var n int64
	s.db.View(func(tx *bolt.Tx) error {
		st := s.db.Stats()
		n = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(s.db.Info().PageSize)
		return nil
	})
	return n
}

// IndexUnread reports that a read-only store has not (yet) read its records
// into the in-memory index.
func IndexUnread(s *BoltStore) bool {
	s.ix.mu.RLock()
	defer s.ix.mu.RUnlock()
	return s.lazy && len(s.ix.byKey) == 0
}

// SetMaxSessionLog lowers the session index's change-log bound for a test.
func SetMaxSessionLog(n int) (restore func()) {
	old := maxSessionLog
	maxSessionLog = n
	return func() { maxSessionLog = old }
}
