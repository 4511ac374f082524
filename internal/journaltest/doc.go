// Package journaltest is the conformance suite every journal.Store must
// pass: the bbolt and in-memory stores in package journal, and the
// PostgreSQL store.
//
// Run drives a store through every transition of the state machine with a
// fake clock it owns (Options.Now), so that leases, settle windows and TTLs
// pass without sleeping. A store that judges time by another clock (the
// PostgreSQL server's) must let the open function put the suite's clock in
// its place. Hammer checks the store's invariants under many goroutines.
//
// # Caveats
//
// The suite compares times at millisecond precision and moves its clock in
// whole milliseconds, so a store that keeps microseconds (PostgreSQL) passes.
// It expects each opened store to be empty.
package journaltest
