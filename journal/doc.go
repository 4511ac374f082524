// Package journal is the durable record of every intent an agent began:
// its key, fingerprint, attempts, lease and outcome.
//
// The harness drives each intent through a [Store]. [Store.Begin] decides
// in one atomic step whether the intent is new (Started: the caller owns
// it), already settled (Answered: run nothing), owned elsewhere (Held),
// abandoned (TakenOver), a payload mismatch (Mismatch), or blocked by a
// recorded suppression (Guarded). The owner records each attempt with
// [Store.StartAttempt] before it runs and the outcome with
// [Store.Complete]; an operator settles what nobody could with
// [Store.Resolve]. [Open] picks the store by the location's scheme, from
// those registered with [Register]: a plain path is a bbolt file
// (journal/bolt, the default, which the harness links in), "postgres://…"
// the store of journal/postgres. journal/memory keeps records in maps,
// for tests. Every store passes the conformance suite in internal/journaltest
// and keeps the contract of docs/design.md, "The call path" and "Journal".
//
// What holds, in every store: a stale owner writes nothing (each change of
// owner advances the lease's fencing token, and StartAttempt and Complete
// need the current one); a live lease or an attempt's settle window
// (Attempt.QuietAt) blocks everyone; Complete, Resolve and Import are
// durable before they return, Begin and StartAttempt when the request says
// Durable; an unknown or pending record never expires into a re-run; a
// damaged record is an error wrapping [ErrCorrupt], never an answer.
//
// The state machine is one, and every store calls it: it lives, with the
// record's binary form, in packages internal to journal, which only the
// store packages import. The in-memory store is journal/memory.
//
// docs/journal.md has the long form: the state diagram, the suppression
// guard, clocks, durability, TTL and GC, and the bbolt file's layout.
//
// # Caveats
//
//   - Stores judge leases and TTLs by a wall clock: the process's for
//     bbolt and the in-memory store, the server's for PostgreSQL. A clock
//     stepped forward ends leases and TTLs early.
//   - Non-durable pending records need not be synced, so a machine (or
//     database server) crash can lose them; only tools whose repeat is
//     harmless get them. The durable stores keep them past a crash of the
//     process (bbolt's pending log, the server for PostgreSQL and Redis),
//     so that a restart does not take an intent that may have run for a
//     new one; the memory store keeps nothing past its process.
//   - The memory store scans all records for List, GC and the guard.
package journal
