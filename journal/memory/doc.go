// Package memory is a journal store that keeps its records in maps, for
// tests and for ephemeral agents whose journal may die with the process:
//
//	h := harness.New(memory.New(nil), nil)
//
// It keeps journal.Store's contract but durability. Records are kept in
// their binary form, so a caller never shares memory with the store. It
// is not registered with journal.Open.
//
// # Caveats
//
//   - The store judges leases and TTLs by Options.Now, the process's clock
//     by default: a clock stepped forward ends leases and TTLs early.
//   - List, GC and the suppression guard scan every record: the store is
//     meant for small journals.
package memory
