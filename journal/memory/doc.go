// Package memory is a journal store that keeps its records in maps, for
// tests and for ephemeral agents whose journal may die with the process:
//
//	h := harness.New(memory.New(nil), nil)
//
// It keeps the contract of journal.Store, and passes the conformance suite,
// except durability: nothing outlives the process. Records are kept in
// their binary form, as the bbolt store keeps them, so a caller never
// shares memory with the store. It is not registered with journal.Open: a
// journal that has no location is made with New.
//
// # Caveats
//
//   - The store judges leases and TTLs by Options.Now, the process's clock
//     by default: a clock stepped forward ends leases and TTLs early.
//   - List, GC and the suppression guard scan every record: the store is
//     meant for small journals.
package memory
