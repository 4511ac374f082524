// Package postgres is a journal.Store on PostgreSQL, for fleets of agent
// processes on many hosts that share one journal.
//
// It keeps the state machine of package journal and passes the same
// conformance suite (internal/journaltest) as the bbolt and in-memory
// stores. Open connects, creates or migrates the schema, and returns a
// *Store that is safe for concurrent use; any number of processes may open
// the same schema at once.
//
// # Claims, leases and fencing
//
// Begin is one statement in the common cases: it reads the record and,
// only when there is none and no suppressed record of the tool exists in
// the session, inserts it with INSERT … ON CONFLICT (key) DO NOTHING. When
// a record exists, that statement writes nothing and takes no transaction
// id, so a replay is a read. Anything else (taking over an expired lease,
// replacing a record past its TTL, a Retake, a mismatch to record as a
// suppression, a suppression that may guard the intent, losing an insert
// race) runs in a transaction that holds the record's row lock (SELECT …
// FOR UPDATE): there is no check-then-act. Every decision, on either path,
// is journal.DecideBegin's.
//
// Each record has a lease (owner, expiry) and a fencing token that rises
// whenever ownership changes, including when an expired record is replaced.
// StartAttempt and Complete are single UPDATEs whose WHERE clause demands
// the pending state and the caller's token; a stale owner matches no row
// and gets journal.ErrFenced.
//
// # The server's clock decides
//
// Every time of a record (created, updated, attempt start, end and quiet
// time, lease and record expiry) and every comparison with one (a live
// lease, a passed TTL, GC, Stats) uses the database server's clock, read
// with clock_timestamp() inside the statement or, for a transaction, once
// it holds the record's row lock (Stats reads it as statement_timestamp(),
// the start of its statement); the shared decision (journal.DecideBegin)
// is given that instant. journal.Options.Now is ignored (tests move time
// with Options.TestClock). So a client whose clock is minutes off neither
// takes over a live lease nor sees a live record as expired, and every
// process of a fleet judges alike.
//
// # Atomic effect and outcome
//
// A tool whose side effect lives in the same database can run it inside the
// transaction that records its outcome, with CompleteInTx: the effect and
// the outcome commit together or not at all, so there is no window in
// which the effect happened and the journal does not know it.
//
// # Connection loss
//
// When the connection fails after a write was sent, the write may or may
// not have committed (the server commits a statement it received even if
// the client has gone). The store does not guess: the error wraps
// ErrOutcomeUncertain, and the harness reports the intent as unknown. An
// error raised before anything was sent, a failure inside a transaction
// before its COMMIT, or an ERROR the server reported, is a definite
// failure. An uncertain Begin may have left a pending record under the
// caller's lease: a retry sees it Held until the lease expires, then
// takes it over.
//
// # Durability
//
// A BeginRequest or AttemptRequest with Durable false is committed with
// synchronous_commit off for that transaction alone: it is visible to every
// session at once, and only a crash of the server can lose it. A Retake is
// always committed synchronously, since it overrides a settled outcome.
// Everything
// else commits under the server's synchronous_commit setting (on unless a
// DBA turned it off).
//
// # Integrity
//
// Every row carries a checksum: the SHA-256 of the binary form of its
// other columns, written by a trigger (BEFORE INSERT OR UPDATE) on the
// store's own writes, and checked by the store on every row it reads. A
// row changed by anything else (psql, another program, damaged storage)
// no longer matches, and reading it is an error wrapping
// journal.ErrCorrupt that names the key: never an answer. The trigger
// seals only in sessions where the setting agentonce.seal is on; the store
// sets it on each of its connections. A deliberate repair is sealed by
// running it in a session that turns it on (SET agentonce.seal = on, with
// client_encoding UTF8). Migration 2 seals the rows already stored.
//
// # Stats
//
// Stats reads Records, Attempts, ByState and ByTool from the counts table,
// a few rows per tool, and Expired, OverdueUnknown, Oldest and Newest
// through the indexes: a range scan of records_expires_idx up to now (so
// its cost grows with the records past their TTL, not with the journal)
// and either end of records_created_idx. It reads everything in one
// REPEATABLE READ snapshot, in which the counts agree with the rows.
// ScanStats counts the same from every row instead, as a check (agentctl
// stats --scan); the two must be equal.
//
// Triggers on records keep the counts in the transaction of every write,
// whoever makes it: the store, psql, another program. Each tool's counts
// are split over 64 rows (shards), chosen by the last byte of the record's
// key, so that concurrent writers of a fleet seldom wait for one counter
// row's lock, which a write holds until it commits: keeping the counts
// costs each new record and each state change one more row update in its
// transaction. The store's sessions (agentonce.count_rows on, which the
// store sends like agentonce.seal) count row by row: a new record is one
// upsert of its counter row, a state change one update of it, and an update
// that changes no count (a lease renewal) fires nothing. Every other
// session's INSERTs and UPDATEs, and every DELETE (GC), are counted once
// per statement from its transition tables, so a bulk statement costs one
// update per counter row it changes; counted row by row, one transaction
// that changes many rows gets slower with every row. TRUNCATE empties the
// counts. A counter row that falls to zero stays, and Stats leaves zero
// counts out of ByState and ByTool, as the other stores do.
//
// The counts are right only if every change of records fires the triggers:
// with the triggers disabled, or under session_replication_role = replica
// (a logical-replication subscriber that applies records but not counts),
// they drift. ScanStats still tells the truth.
//
// # Schema and migrations
//
// All tables live in one PostgreSQL schema (Options.Schema, default
// "agentonce"). Open takes pg_advisory_xact_lock(0x61676f,
// hashtext(schema)) and, in that transaction, creates the schema and the
// meta table if needed and applies every migration above the stored
// version. Concurrent Opens queue on the lock: the first creates, the rest
// read. A schema newer than SchemaVersion is refused with
// journal.ErrNewerVersion. The meta table holds the fleet's namespace: the
// first Open stores Options.Journal.Namespace (or a random one); later
// Opens read it, and a different non-zero namespace is
// journal.ErrNamespaceMismatch. A read-only Open creates nothing and makes
// its sessions read-only on the server; it refuses a schema older than
// SchemaVersion until a read-write Open has migrated it.
//
// Migration 1 creates the records table and its indexes; migration 2 adds
// the checksum and seals the rows already stored; migration 3 creates the
// counts table and its triggers, then counts the rows already stored in
// one pass over the table (under a second for a million rows on the
// benchmark machine). Its CREATE TRIGGER holds the records table against
// writes until the migration commits, so writers of an older release still
// running wait for it rather than go uncounted; their later writes are
// counted by the triggers like any other.
//
// # Table layout
//
// meta, one row:
//
//	singleton   boolean PK   always true
//	namespace   uuid         the fleet's UUIDv5 namespace
//	version     integer      schema version (SchemaVersion)
//	created_ns  bigint       when the journal was created
//
// records, one row per intent; times are int64 nanoseconds since the Unix
// epoch (to_timestamp(created_ns / 1e9) shows one), NULL for none:
//
//	key                  uuid PK    the idempotency key
//	version              integer    record schema version
//	tenant, session,
//	turn, tool,
//	discriminator        text       the intent
//	fingerprint          bytea      SHA-256 of the canonical input
//	effect               smallint   journal.Effect
//	input                bytea      canonical input, NULL when not kept
//	state                smallint   journal.State (1 pending … 5 unknown)
//	output               bytea      the result of a succeeded intent
//	error_class,
//	error_message        text       a failed, suppressed or unknown outcome
//	attempts             jsonb      [{"id","start","end","class","error","quiet"}]
//	lease_owner          text       the lease
//	lease_token          bigint     the fencing token
//	lease_expires_ns     bigint
//	res_state, res_output,
//	res_reason, res_by,
//	res_at_ns                       an operator's resolution, NULL if none
//	created_ns, updated_ns,
//	expires_ns           bigint     expires_ns = created + TTL
//	checksum             bytea      sha256(record_send(ROW(the other columns)))
//
// counts, up to 64 rows (shards) per tool; Stats sums them:
//
//	shard        smallint PK  get_byte(uuid_send(key), 15) & 63
//	tool         text     PK
//	pending, succeeded,
//	failed, suppressed,
//	unknown      bigint       records in each state
//	attempts     bigint       their attempts
//
// Indexes, besides the primary key:
//
//	records_scope_idx    (tenant, session, turn, created_ns DESC)  List by tenant/session/turn
//	records_tool_idx     (tool, created_ns DESC)                   List by tool
//	records_state_idx    (state, created_ns DESC)                  List by state
//	records_created_idx  (created_ns DESC)                         List, newest first
//	records_expires_idx  (expires_ns)                              GC
//	records_guard_idx    (tenant, session, tool, turn, created_ns DESC)
//	                     WHERE state = 4                           the suppression guard
//
// # Caveats
//
// The server's clock is a wall clock: if it is stepped forward (a manual
// change, NTP correcting a large error), every live lease and settle window
// ends early for every process at once, and settled records expire early;
// stepped back, leases, settle windows and TTLs last longer, which delays
// takeovers but lets nothing run twice. Clients' clocks do not matter.
//
// Intent fields, owners and schema names must be valid UTF-8 without NUL
// bytes (PostgreSQL text cannot hold them); a record that breaks this is
// refused with journal.ErrInvalid naming the field. Free text (error
// messages, attempt ids, resolution reasons) is stored with invalid UTF-8
// and NUL bytes replaced by U+FFFD, because refusing it would lose an
// outcome.
//
// Times outside the years 1678 to 2262 cannot be stored.
//
// CompleteInTx holds the record's row lock while the effect runs: a Begin
// of the same key from another process waits for it, and a long effect
// holds a connection and a transaction open.
//
// List streams rows from one query and holds a pooled connection until the
// loop ends. GC deletes in one statement.
//
// The store relies on pgx's per-connection prepared statements. Behind a
// pooler in transaction mode (PgBouncer), add default_query_exec_mode=exec
// to the URL. The store sends agentonce.seal as a startup parameter; a
// pooler must pass it on (PgBouncer: track_extra_parameters), or set it for
// the agents' role instead (ALTER ROLE agent SET agentonce.seal = on).
// Without it every write is stored unsealed and reads as corrupt. The
// store sends agentonce.count_rows the same way; without it the store's
// writes are counted per statement, which is as right but costs each write
// one more trigger call (a statement trigger fires even on a statement that
// writes no row, such as a replayed Begin).
//
// An operator's bulk edit in psql is counted per statement and costs little.
// In a session with agentonce.count_rows on, a transaction that inserts or
// updates many rows takes time quadratic in its rows; a migration that
// rewrites many rows turns the setting off for its transaction.
//
// A process of a version before checksums that is still writing when a
// newer one migrates the schema writes unsealed rows, which then read as
// corrupt: stop the older processes before the first newer one opens the
// schema.
package postgres
