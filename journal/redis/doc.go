// Package redis is a journal.Store on a Redis or Valkey server, for teams
// that already run one. It keeps the journal's contract: the same state
// machine and record checksums as the bbolt and PostgreSQL stores, leases
// and expiry judged by the server's clock (TIME), and every write fenced.
// It passes the conformance suite in internal/journaltest. A program that
// opens "redis://" or "rediss://" journals imports it for its side effect.
//
// Each record is a string holding its checksummed encoding, beside sorted
// sets by creation and by expiry and a set of suppressed records per
// (tenant, session, tool). Every key starts with the hash tag "{prefix}:",
// so that a cluster keeps a journal in one slot.
//
// Each transition is decided in Go and written by one Lua script that
// first compares the records the decision read, and the decision's clock,
// with the server's; when anything differs it writes nothing and answers
// what it found, and the transition is decided again. Two writers racing
// on one key thus serialize. A transition costs one round trip when its
// guess of the record holds, and a write one fsync. A script whose answer
// is lost is not sent again: the error wraps journal.ErrOutcomeUncertain.
//
// Durability: an Unkeyed tool's write-ahead record must survive a crash of
// the server, so Open refuses, with ErrNotDurable, a server without
// appendonly yes and appendfsync always, unless
// Options.AllowUnsyncedWrites, which gives up that guarantee. Replication
// does not help: a promoted replica may lack the last writes.
//
// docs/redis.md is the long form: the layout, the script's checks, round
// trips and durability.
//
// # Caveats
//
//   - Stats reads every record: the store keeps no counts.
//   - List reads no snapshot: a record written meanwhile may or may not be
//     seen.
//   - Records created within one microsecond are listed by key.
//   - The script needs Redis 5 or later (or Valkey) and EVAL and EVALSHA;
//     a guarded Begin's script reads records by name, not through KEYS.
//   - Live inspection over a socket is bbolt's; agentctl reads a Redis
//     journal directly.
package redis
