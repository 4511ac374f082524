// Package journal is the durable record of every intent an agent began:
// its key, fingerprint, attempts, lease and outcome.
//
// The harness drives each intent through a [Store]: [Store.Begin] decides in
// one atomic step whether the intent is new (Started: the caller owns it),
// already settled (Completed: answer from the record, run nothing), owned
// elsewhere (InFlight), abandoned (TakenOver), a payload mismatch
// (Mismatch), or blocked by a recorded suppression (Guarded). The owner
// records each retry with [Store.StartAttempt] before it runs and the
// outcome with [Store.Complete]; an operator settles what nobody could with
// [Store.Resolve]. Three stores implement it: [OpenBolt] (a bbolt file, the
// default), [NewMemory] (maps, for tests and ephemeral agents) and the
// PostgreSQL store in journal/postgres. All of them pass the conformance
// suite in internal/journaltest.
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
// Mismatch is decided before anything else and only for a live record; a
// zero fingerprint on either side means "not computed" and matches.
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
// tool's nature) absorbs. The bbolt store then keeps the pending record in
// memory (an overlay consulted by every call on the store, so it is visible
// at once) and writes it once, with its outcome: one fsynced commit per call
// instead of two. A durable write of the same key, or Close, writes it too.
//
// Concurrent commits are grouped: one goroutine takes the first queued write
// at once, adds every write queued behind it (up to Options.MaxBatchSize,
// waiting up to Options.MaxBatchDelay for more when that is set), and
// commits them in one bbolt transaction, so parallel tool calls share their
// fsyncs. A group whose transaction fails is retried one write at a time, so
// that one bad write does not fail its neighbours; writes are therefore
// safe to run twice.
//
// Begin on a settled record (the replay path) is one bbolt read transaction
// and writes nothing. A Retake, which turns a settled record back into a
// pending one, is therefore always written durably: the replay path reads
// only the file.
//
// # TTL and GC
//
// A record is kept for BeginRequest.RecordTTL (default [DefaultTTL], 7 days)
// from its creation; TakenOver and Retake extend it to a full TTL from then,
// Resolve to its original length from the verdict. Past that it is expired:
// Begin treats it as absent, so a genuine late call runs anew (with a token
// above the old record's, so its old owner stays fenced), and [Store.GC]
// removes it. A pending record whose lease is still live is never expired:
// its owner is working. Import ignores TTLs: a record present is present.
//
// # Record encoding
//
// The bbolt store keeps each record as one value: a format byte (the schema
// version), then fields, each a uvarint tag, a uvarint length and the
// payload. Integers are uvarints, times zig-zag varints of Unix nanoseconds
// (absent when zero: times are kept to the nanosecond, in UTC), strings and
// byte slices raw. A reader skips tags it does not know, so a later version
// may add fields that older readers ignore; a newer format byte, which may
// change what known tags mean, is refused with [ErrNewerVersion], as is a
// journal whose meta bucket names a newer schema. Decoding copies the value
// once and points every string and byte slice into that copy: three
// allocations per record at most.
//
// # The bbolt file
//
// The file holds a meta bucket (schema version, namespace), a records
// bucket (key → record) and a sessions bucket (see below). The secondary
// indexes of a writer (by session,
// tool, state, the suppression guard, and a min-heap of expiry times that
// GC walks only as far as now) are kept in memory,
// rebuilt from the records when the file is opened and updated after each
// commit in commit order. This departs from index buckets in the file on
// purpose: each index entry dirtied its own B+tree page, and on this
// hardware each page costs about a tenth of a commit, so a write with five
// index entries cost 1.5× a bare bbolt Update; in memory, a record write
// dirties the same pages as a bare Update, and an index cannot disagree with
// the file after a crash because it is rebuilt from it. A writer's open
// reads and decodes every record, which also proves the file readable.
//
// So that inspection (agentctl ls --session) costs what the session holds
// rather than what the journal holds, the session index is also kept in the
// file, in the sessions bucket, brought up to date by Close from a log of
// the changes made while the journal was open (no extra page on any
// commit). A meta flag says whether it is complete: cleared at a writer's
// open, set by its Close. A read-only open of a complete journal reads no
// record up front: List with a Session filter walks the sessions bucket and
// reads only that session's records; any other query (List without a
// session, Stats, GC) reads every record once, into the in-memory index.
// After a crash the flag stays cleared, readers read everything, and the
// next writer's open rebuilds the bucket.
//
// The file is created with mode 0600 and a random namespace (or
// Options.Namespace). Only one process may open it for writing: another
// gets [ErrInUse] after Options.LockTimeout. bbolt's lock belongs to the open
// file, so a second OpenBolt of the same path in one process is refused as
// well. A file that is not a journal, is damaged or truncated gives
// [ErrCorrupt] naming the file. bbolt panics (or faults on its memory map)
// on some damaged pages; the store turns such a panic into ErrCorrupt, and
// checks the file's length against its meta page before bbolt maps it.
//
// Every record is stored with a CRC-32C of its bytes, checked on every
// read: a record changed on disk is an error wrapping [ErrCorrupt] that
// names the key and the file, never an answer. A writer's OpenBolt decodes
// every record, so it fails on one; [VerifyBolt] lists them all. A record
// written before checksums existed is read unchecked and sealed by its next
// write.
//
// bbolt never shrinks its file: pages freed by GC are reused but not given
// back. [Compact] copies a journal into a new, dense file (100 000 records
// of 332 B take a 98.6 MB file; after GC of half of them the file is still
// 98.6 MB; compacted, 35.6 MB, of which 18.8 MB are pages in use).
//
// # Caveats
//
//   - Opening a bbolt journal for writing reads every record: about 2 µs of
//     CPU per record (0.2 s per 100 000), more when the file is not in the
//     page cache; the in-memory index holds about 260 bytes per record. A
//     read-only open of a cleanly closed journal defers that until a query
//     needs it, so damage to a record it did not read is reported by the
//     query that reads it, not by OpenBolt.
//   - Close writes the session index's changes (one transaction); a writer
//     that made more than 131 072 changes rewrites the whole bucket instead.
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
//     namespace (and so new keys). Remove the file to start afresh.
//   - The bbolt file is in the host's byte order (bbolt's meta page is);
//     copy journals between hosts of the same endianness only.
//   - The memory store scans all records for List, GC and the guard: it is
//     meant for small journals.
package journal
