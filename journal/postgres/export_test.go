package postgres

import "time"

// SetTestClock makes s read now instead of the database server's clock,
// for the tests that move time (the conformance suite's fake clock, a
// process whose leases must look expired). Call it before s is used.
func SetTestClock(s *Store, now func() time.Time) { s.testNow = now }
