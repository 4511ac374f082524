// Package redis is a journal.Store on a Redis or Valkey server, for teams
// that already run one. It keeps the journal's contract: the same state
// machine and record checksums as the bbolt and PostgreSQL stores, leases
// and expiry judged by the server's clock (TIME), and every write fenced.
// It passes the conformance suite in internal/journaltest.
//
// A program that opens "redis://" or "rediss://" journals through
// journal.Open or harness.Open imports it:
//
//	import _ "github.com/agentonce/agentonce/journal/redis"
//
// Each record is a string holding its checksummed encoding; a sorted set by
// creation time serves List and Stats, one by expiry serves GC, and a set
// per (tenant, session, tool) holds the suppressed records the suppression
// guard consults. Every key starts with the hash tag "{prefix}:", so that a
// cluster keeps a journal in one slot. Each transition is one optimistic
// transaction (WATCH, then MULTI/EXEC) over the record, and for Begin over
// the guard set too: two writers racing on one key serialize, and the
// loser decides again on what the winner wrote.
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
//   - Live inspection over a socket is bbolt's; agentctl reads a Redis
//     journal directly, like a PostgreSQL one.
package redis
