package journal

import (
	"context"
	"iter"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// Store is the durable record of intents, attempts and outcomes. Every
// method is safe for concurrent use.
type Store interface {
	// Namespace returns the journal's secret UUIDv5 namespace, created at
	// random with the journal or given in Options.Namespace.
	Namespace() uuid.UUID

	// Begin decides, in one atomic step, what happens to an intent (see
	// BeginOutcome). Answering a settled record writes nothing.
	Begin(ctx context.Context, req BeginRequest) (BeginResult, error)

	// StartAttempt closes the open attempt with the given class and error,
	// appends a new one and extends the lease. It is fenced: a caller whose
	// token is no longer the record's gets ErrFenced and nothing is written.
	StartAttempt(ctx context.Context, req AttemptRequest) error

	// Renew extends the lease of a pending record the caller owns by
	// req.LeaseTTL from the store's now, and returns its new expiry. It is
	// fenced like StartAttempt, and need not be durable.
	Renew(ctx context.Context, req RenewRequest) (time.Time, error)

	// Complete records an intent's outcome. It is fenced like StartAttempt
	// and is always durable when it returns.
	Complete(ctx context.Context, c Completion) (Record, error)

	// Resolve lets an operator settle a pending or unknown intent as
	// succeeded or failed, advancing the fencing token; another settled
	// record gives ErrNotResolvable. On a record awaiting approval it
	// records an approval or a rejection instead (see Resolution).
	Resolve(ctx context.Context, key uuid.UUID, r Resolution) (Record, error)

	// Get returns the record for key, or ErrNotFound.
	Get(ctx context.Context, key uuid.UUID) (Record, error)

	// List yields the records matching f, newest (by Created) first. It may
	// hold a read transaction: do not write to the store inside the loop.
	List(ctx context.Context, f Filter) iter.Seq2[Record, error]

	// GC removes the expired records (see Expired), or with DryRun counts
	// them, and counts the unknown or pending ones past their TTL it keeps.
	GC(ctx context.Context, opts GCOptions) (GCResult, error)

	// Stats counts the journal's records.
	Stats(ctx context.Context) (Stats, error)

	// Import writes a record as it is (from an export or another store). A
	// record already under its key is left alone when identical, else
	// refused with ErrExists.
	Import(ctx context.Context, r Record) error

	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// DefaultTTL is how long a record is kept when RecordTTL is zero.
const DefaultTTL = 7 * 24 * time.Hour

// DefaultLeaseTTL is the owner's lease when a request's LeaseTTL is zero.
const DefaultLeaseTTL = time.Minute

// BeginRequest asks the store to begin (or answer) one intent.
type BeginRequest struct {
	Key         uuid.UUID
	Intent      keyderive.Intent
	Fingerprint keyderive.Fingerprint
	// Effect is the tool's effect kind, kept for previews (agentctl replay).
	Effect Effect
	// Input is the canonical input to store; nil keeps the fingerprint only.
	Input []byte
	// Owner identifies the process that takes the lease.
	Owner string
	// AttemptID is the id of attempt 1, recorded when the record is new.
	AttemptID string
	// LeaseTTL is the owner's lease; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RecordTTL is how long the record is kept; zero means DefaultTTL.
	RecordTTL time.Duration
	// Settle is how long after attempt 1 starts the downstream may still
	// act on it, kept as the attempt's QuietAt: until then nobody takes the
	// intent over. Zero means no wait.
	Settle time.Duration
	// Durable asks that a new record be on disk before Begin returns (an
	// Unkeyed tool's write-ahead); otherwise it may be lost in a crash.
	Durable bool
	// Guard is the scope of the suppression guard (see GuardBlocks).
	Guard GuardScope
	// Retake, when set, is asked about a live settled record with a
	// matching fingerprint; true takes it over as if it were pending with
	// an expired lease (TakenOver, attempts kept). It must be pure: it may
	// be called more than once.
	Retake func(r *Record) bool
	// Approvals, when positive, makes a new intent wait for that many
	// distinct approvers (StateAwaiting, answered Held). It needs a
	// Fingerprint.
	Approvals int
	// ApprovalTTL is how long a new intent awaits approval; zero means the
	// record's TTL.
	ApprovalTTL time.Duration
}

// GuardScope says where a recorded suppression blocks altered inputs.
type GuardScope uint8

const (
	// GuardTurn blocks the tool within the same (tenant, session, turn);
	// the default.
	GuardTurn GuardScope = iota
	// GuardSession blocks the tool within the whole (tenant, session).
	GuardSession
	// GuardOff disables the guard.
	GuardOff
)

// BeginOutcome is what Begin decided.
type BeginOutcome uint8

const (
	// Started: there was no live record; a pending one was created with
	// attempt 1, and the caller owns its lease.
	Started BeginOutcome = iota + 1
	// Answered: the record is settled; answer from it, do not run the tool.
	Answered
	// Held: another owner's lease is live, or the last attempt may still
	// be acting downstream (its QuietAt is ahead), or the record awaits
	// approval: nobody runs or reconciles the intent yet.
	Held
	// TakenOver: the record was pending with an expired lease, or approved
	// (with no attempt). The caller now owns the lease and decides by the
	// tool's effect kind whether to run, reconcile, or complete as unknown.
	TakenOver
	// Mismatch: the key's record, unchanged in Record, has a different
	// fingerprint. The caller's input is recorded suppressed under a key of
	// its own (machine.MismatchKey), so that the guard blocks it.
	Mismatch
	// Guarded: Begin would have let the tool run, but a suppression is
	// recorded under another key within the guard's scope. Nothing was
	// written; Record is the suppressing record.
	Guarded
)

// BeginResult is Begin's answer.
type BeginResult struct {
	Outcome BeginOutcome
	// Record is the record after Begin (for Guarded, the suppressing one).
	Record Record
	// Token is the fencing token for StartAttempt and Complete; set for
	// Started and TakenOver.
	Token uint64
}

// AttemptRequest records a new attempt of an intent the caller owns.
type AttemptRequest struct {
	Key   uuid.UUID
	Token uint64
	// ID is the new attempt's id.
	ID string
	// PrevClass and PrevError close the attempt that came before.
	PrevClass string
	PrevError string
	// LeaseTTL extends the lease from now; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Settle is the new attempt's settle time, as BeginRequest.Settle.
	Settle time.Duration
	// Durable asks that the attempt be on disk before StartAttempt returns.
	Durable bool
}

// RenewRequest extends the lease of an intent the caller owns.
type RenewRequest struct {
	Key   uuid.UUID
	Token uint64
	// LeaseTTL is the lease from now; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// Completion records an intent's outcome.
type Completion struct {
	Key   uuid.UUID
	Token uint64
	// State is StateSucceeded, StateFailed, StateSuppressed or StateUnknown.
	State State
	// Output is the result for StateSucceeded.
	Output []byte
	// ErrorClass and ErrorMessage describe a failed, suppressed or unknown
	// outcome; they also close the last attempt.
	ErrorClass   string
	ErrorMessage string
}

// Resolution is an operator's verdict on an unknown intent. On a record
// awaiting approval it is a decision instead: StatePending approves the
// input Fingerprint names, StateSuppressed rejects; By is required.
type Resolution struct {
	// State is StateSucceeded or StateFailed; StatePending or
	// StateSuppressed to approve or reject.
	State State
	// Output is the result for StateSucceeded (may be nil).
	Output []byte
	// Reason says why; By says who. At is set by the store.
	Reason string
	By     string
	At     time.Time
	// Fingerprint is the input an approval approves.
	Fingerprint keyderive.Fingerprint
}

// Filter selects records for List. Zero fields match everything.
type Filter struct {
	Tenant  string
	Session string
	// Turn needs Session.
	Turn  string
	Tool  string
	State State
	// Since and Until bound Created (inclusive, exclusive).
	Since, Until time.Time
	// Limit caps how many records are yielded; zero means no limit.
	Limit int
}

// GCOptions controls GC.
type GCOptions struct {
	// DryRun counts without removing.
	DryRun bool
}

// GCResult is what GC did.
type GCResult struct {
	// Removed counts the expired records removed (with DryRun, to remove).
	Removed int
	// KeptUnknown counts the unknown and pending records past their TTL.
	KeptUnknown int
}

// Stats counts a journal's records.
type Stats struct {
	Records  int
	ByState  map[State]int
	ByTool   map[string]int
	Attempts int
	// Expired counts the records GC would remove now (see Expired).
	Expired int
	// OverdueUnknown counts the unknown and pending records past their TTL.
	OverdueUnknown int
	Oldest, Newest time.Time
	// SizeBytes is the size of the journal's file or table, where known.
	SizeBytes int64
}
