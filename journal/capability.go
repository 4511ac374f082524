package journal

// LocalReads reports that a read of this store costs about a microsecond,
// less than joining a flight: the harness then answers a re-issued settled
// call by one read before anything else.
func (s *MemoryStore) LocalReads() bool { return true }
