// Package bolt is the default journal.Store: one bbolt file per journal,
// held by one process at a time.
//
// Importing it registers journal.PathScheme, so that journal.Open takes a
// plain path (or "file://path") for a bbolt file; package agentonce imports
// it, so a program that opens its journal with agentonce.Open needs no import.
// [Open] opens a file directly, with its own [Options]: the shared
// journal.Options as their Journal field, and the file's lock timeout and
// group commit. The store keeps journal's state machine and passes the
// conformance suite in internal/journaltest: the contract is
// docs/design.md, "Journal".
//
// What holds: the file is created whole or not at all (built beside its
// path and linked into place), mode 0600. Only one process writes it, and
// every lease found when a writer opens it is a stopped process's, ended
// at once. Complete, Resolve and Import, and durable Begins and attempts,
// are fsynced before they return; concurrent commits share an fsync. Every
// record carries a CRC-32C checked on every read: damage is an error
// wrapping journal.ErrCorrupt naming the key and the file, never an
// answer, and [Verify] lists it. A replay of a settled record this
// process wrote or read twice is answered from a small cache that follows
// every write of the file (cache.go). Opening reads no record: the indexes and
// the counters Stats reads are written with their record, so an open costs
// the same at ten records and at ten million. The store's time moves with
// the monotonic clock (journal.Options.Monotonic), kept in the file across
// restarts, so that setting the wall clock neither expires a record nor
// ends a live lease.
//
// [Store.CompleteWith] runs an effect inside the write transaction that
// records the intent as succeeded: the effect writes to buckets of its own
// in the file ([TxFrom], [InTx] for a harness tool, [Store.View] to read
// them back), and both commit in one transaction or neither does.
//
// docs/journal.md, "The bbolt file", has the long form: the indexes and
// why a new record's wait, migration, checksums, compaction and effects
// in the outcome's transaction.
//
// # Caveats
//
//   - A read-only open takes a shared lock that the writer's excludes:
//     inspecting a journal while its agent runs fails with ErrInUse after
//     Options.LockTimeout (agentctl reads through the agent's socket then).
//   - Non-durable pending records are not synced: they outlive the process
//     (each is also written to <journal>-pending, which the next writer's
//     Open folds in), but a machine crash or power loss can drop them
//     (docs/journal.md).
//   - List without a Session filter walks the time index newest first,
//     reading each record.
//   - A wall clock set ahead across a reboot is indistinguishable from
//     downtime: records may expire. Within a boot the journal's time keeps
//     its first open's origin, even after the clock is corrected
//     (docs/journal.md, "Clocks").
//   - An empty file is refused as corrupt rather than made a new journal.
//   - The first writer of a layout-1 journal reads every record once to
//     build the indexes; layout 2 is refused by older versions.
//   - A CompleteWith effect holds bbolt's single writer lock, and its
//     key's lock, while it runs: every durable write waits for it. Keep it
//     short and local, and do not call the journal from it.
//   - bbolt never shrinks its file ([Compact] copies it dense), and the file
//     is in the host's byte order.
package bolt
