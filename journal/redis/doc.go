// Package redis is a journal.Store on a Redis or Valkey server, for teams
// that already run one. It keeps the journal's contract: the same state
// machine and record checksums as the bbolt and PostgreSQL stores, leases
// and expiry judged by the server's clock (TIME), and every write fenced.
// It passes the conformance suite in internal/journaltest. A program that
// opens "redis://" or "rediss://" journals imports it for its side effect.
//
// Each transition is decided in Go and written by one Lua script that
// first checks that the records the decision read, and its clock, are
// still the server's; otherwise it writes nothing and the transition is
// decided again, so two writers racing on one key serialize. A script
// whose answer is lost is not sent again: the error wraps
// journal.ErrOutcomeUncertain.
//
// Durability: an Unkeyed tool's write-ahead record must survive a crash of
// the server, so Open refuses, with ErrNotDurable, a server without
// appendonly yes and appendfsync always, unless
// Options.AllowUnsyncedWrites, which gives up that guarantee. A promoted
// replica may lack the last writes unless each write waited for it
// (Options.Replicas): Open refuses a cluster with replicas without it.
//
// On a cluster (redis+cluster://, or a *redis.ClusterClient) a journal
// spreads over 64 hash tags, each transition one script in its record's
// slot; the suppression guard's set is read before, not compared by the
// script.
//
// docs/redis.md is the long form: the key layout, the script's checks,
// round trips, durability, the cluster and its failover.
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
