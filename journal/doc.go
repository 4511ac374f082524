// Package journal is the durable record of every intent an agent began:
// its key, fingerprint, attempts, lease and outcome.
//
// The harness drives each intent through a [Store]: [Store.Begin] decides in
// one atomic step whether the intent is new (Started: the caller owns it),
// already settled (Answered: answer from the record, run nothing), owned
// elsewhere (Held), abandoned (TakenOver), a payload mismatch
// (Mismatch), or blocked by a recorded suppression (Guarded). The owner
// records each retry with [Store.StartAttempt] before it runs and the
// outcome with [Store.Complete]; an operator settles what nobody could with
// [Store.Resolve]. Three stores implement it: [OpenBolt] (a bbolt file, the
// default), [NewMemory] (maps, for tests and ephemeral agents) and the
// PostgreSQL store in journal/postgres. All of them pass the conformance
// suite in internal/journaltest. The contract they keep is docs/design.md,
// "The call path" and "Journal".
//
// # State machine
//
//	         Begin: no live record
//	                  │
//	                  ▼                    TakenOver: the lease expired,
//	StartAttempt ⟲ pending ◀──────────────  or BeginRequest.Retake said so
//	                  │                                        │
//	         Complete │ (fenced by the lease token)            │
//	                  ▼                                        │
//	  succeeded · failed · suppressed · unknown ───────────────┘
//	                  ▲
//	pending, unknown ─┘ Resolve (operator): succeeded or failed
//
// Every transition that changes the owner advances the lease's fencing token
// (TakenOver, Resolve, a new record replacing an expired one), and
// StartAttempt and Complete are refused with [ErrFenced] unless the caller
// presents the current token of a pending record: a stale owner writes
// nothing. A live lease blocks everyone, the same owner string included (the
// harness collapses duplicates inside one process before they get here).
// A bbolt journal is held by one process at a time (its file lock), so every
// lease found in it when it is opened for writing belongs to a process that
// stopped; OpenBolt ends those leases as of the open, and a restarted agent
// takes over its interrupted intents at once. The in-memory and PostgreSQL
// stores wait for leases to run out, since their owners may be alive.
// The owner renews its lease with [Store.Renew] for as long as its
// attempt runs, so that only an owner that stopped loses it. A lease that
// ran out is not enough for a takeover: each attempt records when the
// downstream can no longer be acting on it (Attempt.QuietAt: its start plus
// BeginRequest.Settle or AttemptRequest.Settle), and until the latest of
// those has passed Begin answers Held, so that nobody runs or reconciles an
// intent whose previous attempt may still take effect.
// Mismatch is decided before anything else and only for a live record; a
// zero fingerprint on either side means "not computed" and matches.
//
// # The suppression guard
//
// A suppressed record blocks calls of the same tool, in the same tenant
// and session and within the request's GuardScope (the turn by default),
// made under other keys: the model altering the input to dodge the key.
// Every Begin that could let the tool run consults it (a new record, a
// takeover of an expired lease, a Retake), and every suppression arms it: a
// Complete as suppressed, and a Mismatch, which records the caller's intent
// as suppressed under [MismatchKey] in the same atomic step. The rule is
// [GuardBlocks]; the state machine, shared by every store, is [DecideBegin].
// A read-only store answers Mismatch without recording the suppression.
//
// # Clocks
//
// Leases, settle windows and TTLs are instants stored in the records and
// compared with the store's clock. On PostgreSQL that is the database
// server's clock, whatever the clients' clocks say (see journal/postgres).
// The bbolt and in-memory stores are used by one process, so that
// process's clock decides: Options.Now, time.Now by default. Go's
// monotonic clock does not help there: stored instants are wall-clock
// times, which carry no monotonic reading. A wall clock stepped forward
// ends the process's live leases and settle windows early (another caller
// in the process may then take an intent over while its attempt runs; the
// first owner is fenced) and expires settled records early (a late call
// runs anew); unknown and pending records never expire, so no jump re-runs
// them. A clock stepped back makes leases and TTLs last longer.
//
// # Durability
//
// Writes that must survive a crash are committed and fsynced before the
// call returns: Complete and Resolve always, Import always, Begin and
// StartAttempt when their request says Durable. That is the write-ahead of an
// Unkeyed tool: on disk before the tool runs, so that a restart knows an
// attempt may have happened. For Keyed and Idempotent tools the harness
// passes Durable false: a crash before the outcome is recorded makes the
// next call derive the same key and run again, which the downstream (or the
// tool's nature) absorbs. Such a pending record is visible to every call on
// the store at once, and the bbolt store writes it with its outcome: one
// fsynced commit per call instead of two. Concurrent commits are grouped, so
// parallel tool calls share their fsyncs. Begin on a settled record (a
// replay) writes nothing; a Retake, which overrides a settled outcome, is
// always durable.
//
// # TTL and GC
//
// A record is kept for BeginRequest.RecordTTL (default [DefaultTTL], 7 days)
// from its creation; TakenOver and Retake extend it to a full TTL from then,
// Resolve to its original length from the verdict. Past that, a settled,
// known outcome (succeeded, failed, suppressed) is expired ([Expired]):
// Begin treats it as absent, so a genuine late call runs anew (with a token
// above the old record's, so its old owner stays fenced), and [Store.GC]
// removes it. An unknown record, and a pending one (its owner may be gone,
// and then its outcome is unknown), never expire into a re-run: Begin keeps
// answering them (unknown, or Held and then TakenOver), GC keeps them and
// counts them (GCResult.KeptUnknown, Stats.OverdueUnknown). The way out is
// an operator's [Store.Resolve]; the verdict then expires like any other.
// Import ignores TTLs: a record present is present.
//
// # The bbolt file
//
// The file is created with mode 0600 and a random namespace (or
// Options.Namespace). Only one process may open it for writing: another
// gets [ErrInUse] after Options.LockTimeout, and a second OpenBolt of the
// same path in one process is refused as well. A file that is not a
// journal, is damaged or truncated gives [ErrCorrupt] naming the file,
// never a panic; a newer schema gives [ErrNewerVersion].
//
// Opening reads no record: the indexes (by creation time, by session, by
// expiry, the guard's by tenant, session and tool, the unknown and pending
// records) and the counters that Stats reports live in the file and are
// written in the transaction that writes their record (a new record's
// entries after a wait among the newest sixteen, which every query reads
// as well), so they never disagree with it, after a crash either, and
// opening a journal for
// writing costs the same at ten records and at ten million. Stats reads
// the counters; [BoltStore.ScanStats] recounts from the records, and must
// agree. GC walks the expiry index from its earliest entry and stops at
// now; [BoltStore.GCBatch] removes a bounded number per transaction, for a
// background loop that must not hold the writer for long. A journal
// written before the indexes existed (layout 1) is migrated by its first
// writer's OpenBolt, in place, in transactions that record how far they
// got: a crash midway loses nothing and the next open carries on. Until
// then a read-only open answers its queries by reading every record.
//
// Why a new record's index entries wait: a bbolt commit costs the pages
// it writes, and a record's key is a UUID, so its leaf is anywhere in the
// records bucket; index entries written with it dirtied a second leaf and
// the branches above it, 1.4x the time of a bare Update. Their keys wait
// instead in a bucket small enough for bbolt to keep inline in the page
// of bucket headers that every commit rewrites, and enter the index
// sixteen at a time, where they land side by side: a new call costs 1.1x
// a bare commit (index.go has the layout; BENCHMARKS.md the figures).
// Other ways were weighed: a bucket per index costs a root per bucket per
// commit; index entries inside the records bucket share its upper
// branches but still dirty a leaf of their own; keeping the indexes in
// memory costs seconds and a gigabyte at a million records.
//
// Every record is stored with a CRC-32C of its bytes, checked on every
// read: a record changed on disk is an error wrapping [ErrCorrupt] that
// names the key and the file, never an answer. Since opening reads no
// record, the damage is reported by the first call that reads it;
// [VerifyBolt] lists every damaged record. A record written before
// checksums existed is read unchecked and sealed by its next write.
//
// bbolt never shrinks its file: pages freed by GC are reused, not given
// back; [Compact] copies a journal into a new, dense file.
//
// # Caveats
//
//   - A record's index entries are written with it, except a new
//     record's: its key waits in a small bucket that bbolt keeps inline
//     (freshMax of them), and the write that fills it moves them all into
//     the index. A new record's commit costs about what a bare bbolt
//     Update costs; one in sixteen writes a few pages more (index.go,
//     BENCHMARKS.md).
//   - The first writer's open of a layout-1 journal reads every record once
//     to build the indexes (seconds per million records); a layout-2 file
//     is refused by older versions of this package (ErrNewerVersion).
//   - List without a Session filter or an unknown/pending State filter
//     walks the time index, newest first, reading each record to apply
//     the other fields: a Tool filter over a large journal reads every
//     record until Limit matches. A Session filter reads one range of the
//     session index.
//   - Non-durable pending records are lost if the process dies before they
//     are completed or the store is closed. That is the point of them; it
//     is only safe for tools whose repeat is harmless.
//   - List reads records in pages, each in its own read transaction: a loop
//     that runs while others write sees each record as of its page.
//   - A read-only open takes bbolt's shared lock, which the writer's
//     exclusive lock excludes: inspecting a journal while its agent runs
//     fails with ErrInUse after Options.LockTimeout. Two read-only opens
//     share the file.
//   - An owner whose lease expired but that nobody took over may still
//     start attempts and complete: its token is still the record's. Only a
//     takeover (or Resolve) fences it.
//   - An empty file is refused as corrupt rather than made a new journal:
//     a journal truncated to nothing must not come back with a new
//     namespace (and so new keys). Remove the file to start afresh. So
//     that a crash or a power cut while a journal is created cannot leave
//     such a file, a new journal is built and synced in a temporary file
//     beside its path (path.creating-*) and hard-linked into place: the
//     path holds nothing or a whole journal. A cut before the link can
//     leave the temporary file, which holds no record; the next creation
//     removes it once it is ten minutes old.
//     On a file system without hard links bbolt creates the file in place.
//   - The bbolt file is in the host's byte order (bbolt's meta page is);
//     copy journals between hosts of the same endianness only.
//   - The memory store scans all records for List, GC and the guard: it is
//     meant for small journals.
package journal
