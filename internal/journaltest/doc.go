// Package journaltest is the conformance suite every journal.Store must
// pass: the bbolt and in-memory stores in package journal, and the
// PostgreSQL store.
//
// Run drives a store through every transition of the state machine with a
// fake clock it owns (Options.Now), so that leases and TTLs expire without
// sleeping. Hammer checks the store's invariants under many goroutines.
//
// # Caveats
//
// The suite compares times at millisecond precision and moves its clock in
// whole milliseconds, so a store that keeps microseconds (PostgreSQL) passes.
// It expects each opened store to be empty.
package journaltest
