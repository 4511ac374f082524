// Package redis is a journal.Store on a Redis or Valkey server, for teams
// that already run one. It keeps the journal's contract: the same state
// machine and record checksums as the bbolt and PostgreSQL stores, leases
// and expiry judged by the server's clock (TIME), and every write fenced.
// It passes the conformance suite in internal/journaltest. A program that
// opens "redis://" or "rediss://" journals imports it for its side effect.
//
// Each transition is decided in Go and written by one Lua script that
// writes only if the records the decision read, and its clock, are still
// the server's; a script whose answer is lost wraps
// journal.ErrOutcomeUncertain. Open refuses (ErrNotDurable) a server that
// does not fsync every write, and a cluster with replicas unless each
// write waits for them (Options.Replicas). On a cluster (redis+cluster://)
// a journal spreads over 64 hash tags.
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
