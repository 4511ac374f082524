// Package journal is the contract of the durable record of every intent
// an agent began: its key, fingerprint, attempts, lease and outcome.
//
// [Store.Begin] decides in one atomic step whether an intent is new
// (Started), settled (Answered), owned elsewhere (Held), abandoned
// (TakenOver), a payload mismatch (Mismatch) or blocked by a recorded
// suppression (Guarded); the owner records attempts with
// [Store.StartAttempt] and the outcome with [Store.Complete]; an operator
// settles the rest with [Store.Resolve]. Package journal/reissue says what
// a call of a recorded intent would do now.
//
// [Open] picks a store by the location's scheme from those [Register]ed:
// a plain path is a bbolt file (journal/bolt), "postgres://…"
// journal/postgres, "redis://…" journal/redis; journal/memory is for
// tests. All share one state machine and one conformance suite.
//
// In every store a stale owner writes nothing (the fencing token), a live
// lease or settle window blocks everyone, Complete, Resolve and Import are
// durable before they return, an unknown or pending record never expires
// into a re-run, and a damaged record is an error wrapping [ErrCorrupt].
// docs/journal.md is the long form.
//
// # Caveats
//
//   - Stores judge leases and TTLs by a wall clock (the process's, or the
//     database server's): a clock stepped forward ends them early.
//   - A non-durable pending record may be lost in a crash of the machine
//     or the database server; only tools whose repeat is harmless get
//     one. The memory store keeps nothing past its process.
package journal
