// Package postgres is a journal.Store on PostgreSQL, for fleets of agent
// processes on many hosts that share one journal.
//
// Importing it registers the "postgres" and "postgresql" schemes with
// journal.Open. Open connects, creates or migrates the schema (under an
// advisory lock, so concurrent Opens queue), and returns a *Store that is
// safe for concurrent use by any number of processes. It keeps package
// journal's state machine and passes the conformance suite in
// internal/journaltest: the contract is docs/design.md, "Journal".
//
// What holds: a Begin is one statement, or a transaction holding the
// record's row lock, never check-then-act; a stale owner's write matches no
// row and gets journal.ErrFenced. Every time is the server's clock.
// CompleteInTx runs an effect in the transaction that records its outcome.
// A write whose connection failed after it was sent wraps
// ErrOutcomeUncertain, never a guess. Every row carries a checksum checked
// on every read (journal.ErrCorrupt names the key). Stats counts the rows
// when asked: nothing on the write path.
//
// docs/postgres.md is the long form: leases and fencing, the clock,
// connection loss, durability, integrity, Stats, the migrations and the
// table layout.
//
// # Caveats
//
//   - The server's clock is a wall clock: stepped forward, every live lease
//     and TTL ends early for every process at once.
//   - Intent fields, owners and schema names must be valid UTF-8 without
//     NUL (journal.ErrInvalid); free text has them replaced by U+FFFD.
//     Times outside the years 1678 to 2262 cannot be stored.
//   - CompleteInTx holds the row lock while the effect runs; List holds a
//     pooled connection until the loop ends.
//   - Open refuses synchronous_commit or fsync off (ErrNotDurable); only a
//     synchronous standby keeps every answered outcome across a failover.
//   - Behind a pooler in transaction mode, add default_query_exec_mode=exec
//     to the URL.
//   - Stats and a List by neither session nor tenant read the whole
//     table: seconds at ten million records.
//   - Expiry is by DELETE, not by dropping partitions: a partitioned table
//     could hold two records of one key (docs/postgres-scale.md).
//   - Stop processes older than the checksums before a newer one migrates
//     the schema.
package postgres
