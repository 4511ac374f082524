// Package journal is the contract of the durable record of every intent
// an agent began: its key, fingerprint, attempts, lease and outcome.
//
// The harness drives each intent through a [Store]. [Store.Begin] decides
// in one atomic step whether the intent is new (Started: the caller owns
// it), already settled (Answered), owned elsewhere (Held), abandoned
// (TakenOver), a payload mismatch (Mismatch), or blocked by a recorded
// suppression (Guarded). The owner records each attempt with
// [Store.StartAttempt] and the outcome with [Store.Complete]; an operator
// settles what nobody could with [Store.Resolve]. [Reissue] says what a
// call of a recorded intent would do now, the one rule every caller follows.
//
// The stores are packages of their own, which [Open] picks by the
// location's scheme from those registered with [Register]: a plain path
// is a bbolt file (journal/bolt, which package agentonce links in),
// "postgres://…" journal/postgres, "redis://…" journal/redis;
// journal/memory keeps records in maps, for tests. All of them call one
// state machine, internal to journal, and pass the conformance suite in
// internal/journaltest.
//
// What holds, in every store: a stale owner writes nothing (each change of
// owner advances the lease's fencing token); a live lease or an attempt's
// settle window (Attempt.QuietAt) blocks everyone; Complete, Resolve and
// Import are durable before they return, Begin and StartAttempt when the
// request says Durable; an unknown or pending record never expires into a
// re-run; a damaged record is an error wrapping [ErrCorrupt].
//
// docs/journal.md has the long form: the state diagram, the suppression
// guard, clocks, durability, TTL and GC, and the bbolt file's layout.
//
// # Caveats
//
//   - Stores judge leases and TTLs by a wall clock (the process's, or the
//     database server's): a clock stepped forward ends them early.
//   - A non-durable pending record may be lost in a crash of the machine
//     or the database server; only tools whose repeat is harmless get
//     one. The memory store keeps nothing past its process.
package journal
