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
// Each layer between a call and bbolt is there for the figure beside it
// (BENCHMARKS.md has the commands):
//
//   - The overlay: a non-durable pending record stays in memory until its
//     outcome, so a Keyed call is one commit (BenchmarkPaired: 1.10× one
//     raw Update; an Unkeyed call 1.10× two).
//   - The pending log: each such record is also one unsynced write(2) to
//     <journal>-pending, folded in by the next writer's Open, for two
//     allocations a call. A kill loses none; a power cut can.
//   - Lock stripes and group commit: one key's decisions are serialized,
//     other keys' commits share fsyncs (BenchmarkConcurrent64: 64
//     goroutines do 6.3–8.4× one; the disk bounds it).
//   - The settled-record cache: a replay this process wrote or read twice
//     costs a map lookup, not a read and a decode (harness BenchmarkReplay:
//     1.04–1.07× a raw View+Get, 3.1–4.0× without).
//   - The indexes and counters, in the file with their record: an open
//     reads no record (at 1M records BenchmarkOpen takes 78–95 µs and
//     TestScaleOpenRSS peaks at 8 MiB; in memory, 3.9–5.8 s and 1.39 GiB),
//     for 5.96 pages a Keyed commit against a bare Update's 5.58.
//   - The boot-time clock, kept in the file: a wall-clock jump neither
//     expires a record nor ends a live lease, and an open ends dead leases
//     as it reads them (1M records, one in twenty pending: 251–372 µs,
//     where rewriting them took 463–605 ms). A clock set ahead across a
//     reboot still reads as downtime.
package bolt
