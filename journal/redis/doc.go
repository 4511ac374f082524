// Package redis is a journal.Store on a Redis or Valkey server, for teams
// that already run one. It keeps the journal's contract: the same state
// machine and record checksums as the bbolt and PostgreSQL stores, leases
// and expiry judged by the server's clock (TIME), and every write fenced.
// It passes the conformance suite in internal/journaltest.
//
// A program that opens "redis://" or "rediss://" journals through
// journal.Open or agentonce.Open imports it:
//
//	import _ "github.com/agentonce/agentonce/journal/redis"
//
// Each record is a string holding its checksummed encoding; a sorted set by
// creation time serves List and Stats, one by expiry serves GC, and a set
// per (tenant, session, tool) holds the suppressed records the suppression
// guard consults. Every key starts with the hash tag "{prefix}:", so that a
// cluster keeps a journal in one slot.
//
// Each transition (Begin, StartAttempt, Renew, Complete, Resolve) is
// decided in Go by journal.Kit on the records it depends on, and written
// by one Lua script (EVALSHA, its source sent again on NOSCRIPT) that
// compares those records' bytes, and for a guarded Begin the guard set's
// members and records, with the server's, checks that the decision's clock
// is the server's (TIME, at most 25 ms behind it, never ahead), and only
// then writes the record and its index entries. When anything differs it
// writes nothing and answers the records as they are and the server's
// time, and the transition is decided again on them: two writers racing on
// one key serialize, and the loser decides on what the winner wrote. Begin
// first assumes that its key holds no record, the owner's next step
// assumes the record it wrote last, and both decide on an estimate of the
// server's clock (its last TIME plus the time elapsed here), so that each
// costs one round trip and, when it writes, one fsync of the append-only
// file; a wrong assumption costs one more round trip. A script whose answer
// is lost is not sent again: the error wraps journal.ErrOutcomeUncertain.
// An idempotency-middleware request for a new key thus costs two round
// trips (Begin, Complete: the store says BeginReplays, so the middleware
// reads nothing before Begin) and two fsyncs (the write-ahead record before
// the handler runs, its outcome after), a replay one round trip and none: a
// GET when that middleware saw the key, else Begin's script, which finds
// the record and writes nothing. Import and GC are optimistic transactions
// (WATCH, then MULTI/EXEC).
//
// # Durability
//
// The journal's promise needs every acknowledged write on disk: an Unkeyed
// tool's write-ahead record must survive a crash of the server, or the
// tool could run twice. Redis acknowledges a write before it reaches the
// disk unless the append-only file is on and fsynced on every write.
// Open therefore reads the server's configuration and refuses, with
// ErrNotDurable, a server without appendonly yes and appendfsync always.
// Options.AllowUnsyncedWrites opens it anyway, for tests or for a
// deployment that accepts losing the last second of writes (appendfsync
// everysec) and with it the write-ahead guarantee. Replication does not
// help: a replica promoted after a failover may lack the last writes.
//
// # Caveats
//
//   - Stats reads every record (the store keeps no counts): a pass over the
//     journal, where bbolt and PostgreSQL answer from stored counts.
//   - List reads no snapshot: a record written while it runs may or may not
//     be seen.
//   - A sorted-set score is in microseconds: records created within one
//     microsecond of each other are listed by key.
//   - The store runs a Lua script that reads TIME and then writes, which
//     takes Redis 5 or later (or Valkey); a server or ACL that refuses
//     EVAL and EVALSHA cannot hold a journal. For a guarded Begin the script reads
//     the guard set's members' records by name, not through KEYS; the hash
//     tag keeps them in the script's slot.
//   - Live inspection over a socket is bbolt's; agentctl reads a Redis
//     journal directly, like a PostgreSQL one.
package redis
