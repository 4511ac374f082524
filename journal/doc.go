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
// [Store.Resolve]. [Open] picks a store by the location: a plain path is a
// bbolt file ([OpenBolt], the default), "postgres://…" the store of
// journal/postgres, once imported. [NewMemory] keeps records in maps, for
// tests. Every store passes the conformance suite in internal/journaltest
// and keeps the contract of docs/design.md, "The call path" and "Journal".
//
// What holds, in every store: a stale owner writes nothing (each change of
// owner advances the lease's fencing token, and StartAttempt and Complete
// need the current one); a live lease or an attempt's settle window
// (Attempt.QuietAt) blocks everyone; Complete, Resolve and Import are
// fsynced before they return, Begin and StartAttempt when the request says
// Durable; an unknown or pending record never expires into a re-run; a
// record damaged on disk is an error wrapping [ErrCorrupt], never an
// answer. The state machine is one, in this package ([DecideBegin] and the
// Apply functions), and every store calls it.
//
// docs/journal.md has the long form: the state diagram, the suppression
// guard, clocks, durability, TTL and GC, and the bbolt file's layout.
//
// # Caveats
//
//   - The bbolt and in-memory stores judge leases and TTLs by their
//     process's wall clock (Options.Now); PostgreSQL by the server's. A
//     clock stepped forward ends leases and TTLs early.
//   - A bbolt journal is held by one process at a time: a second writer,
//     and a read-only open while the agent runs, get [ErrInUse].
//   - Non-durable pending records are lost if the process dies before they
//     complete; only tools whose repeat is harmless get them.
//   - List without a Session filter walks records newest first and reads
//     each one: a Tool filter over a large journal reads until Limit matches.
//   - bbolt never shrinks its file ([Compact] copies it dense), and the file
//     is in the host's byte order.
//   - The memory store scans all records for List, GC and the guard.
package journal
