// Package bolt is the default journal.Store: one bbolt file per journal,
// held by one process at a time.
//
// Importing it registers journal.PathScheme, so that journal.Open takes a
// plain path; package agentonce imports it, so a program that opens its
// journal with agentonce.Open needs no import. [Open] opens a file with its
// own [Options], which hold the shared journal.Options as their Journal
// field. The contract is docs/design.md, "Journal", checked by the
// conformance suite in internal/journaltest; docs/journal.md, "The bbolt
// file", has the long form and the caveats of use.
//
// What holds: the file is created whole or not at all, and one process
// writes it. Complete, Resolve, Import and durable writes are fsynced
// before they return. Every record carries a CRC-32C and its key, checked
// on every read, and a Begin that finds no record where the indexes hold
// one refuses: damage is an error wrapping journal.ErrCorrupt naming the
// key and the file, never a new intent ([Verify] lists it).
// [Store.CompleteWith] commits an effect's writes with the outcome, or
// neither.
//
// # Caveats
//
// Each layer between a call and bbolt is there for a figure measured in
// BENCHMARKS.md ("The layers"): the overlay of non-durable pending records,
// the pending log, lock stripes with group commit, the settled-record
// cache, the indexes and counters kept in the file, and the boot-time
// clock. Two of them bound what holds:
//
//   - A non-durable pending record is also one unsynced write(2) to
//     <journal>-pending, folded in by the next writer's Open: a kill loses
//     none; a power cut can.
//   - A wall-clock jump neither expires a record nor ends a live lease; a
//     clock set ahead across a reboot still reads as downtime.
package bolt
