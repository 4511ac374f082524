package journal

// LocalReads reports that a read of this store costs about a microsecond (a
// memory-mapped file), less than joining a flight: the harness then answers
// a re-issued settled call by one read before anything else.
func (s *BoltStore) LocalReads() bool { return true }

// LocalReads reports that reads are local (see BoltStore.LocalReads).
func (s *MemoryStore) LocalReads() bool { return true }
