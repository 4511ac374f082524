// Package redis is a journal.Store on Redis or Valkey, for teams that run
// it already: the same state machine as every store (journal.DecideBegin
// and the Apply functions), each decision made atomically with WATCH and
// MULTI/EXEC on the record's key, and records kept in a binary form sealed with a CRC-32C.
//
// Open connects, checks the server's durability, and creates or reads the
// journal's namespace under a key prefix (Options.Prefix); importing the
// package registers redis:// and rediss:// locations with journal.Open.
//
// # Durability
//
// A journal's promise — a write is durable when the call returns — holds
// on Redis only with the append-only file fsynced on every write:
// appendonly yes and appendfsync always. Open checks both with CONFIG GET
// and refuses a server configured otherwise (appendfsync everysec loses up
// to a second of acknowledged writes in a crash: a charge whose record is
// lost runs again). A server that forbids CONFIG (some managed services)
// is refused too unless Options.AssumeDurable says the operator checked.
// Replication does not help: Redis acknowledges before replicas have the
// write, and a failover to a replica can lose it.
//
// # Caveats
//
// Leases and TTLs are judged on the client's clock (Options.Now, else
// time.Now), not the server's: keep the fleet's clocks in sync, or leases
// end early or late by the skew. List, GC and Stats scan every record of
// the prefix (SCAN): fine for the server-side idempotency journal, whose
// records expire in a day, not for a journal of millions of records.
package redis
