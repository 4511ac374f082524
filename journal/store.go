package journal

import (
	"context"
	"iter"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// Store is the durable record of intents, attempts and outcomes. The
// harness drives every intent through it: Begin, then StartAttempt before
// each retry, then Complete. Every method is safe for concurrent use.
//
// Implementations: the bbolt store (journal/bolt, the default), the in-memory
// store (journal/memory) and the PostgreSQL store (journal/postgres). All pass the
// conformance suite in internal/journaltest.
type Store interface {
	// Namespace returns the journal's secret UUIDv5 namespace, created at
	// random with the journal or given in Options.Namespace.
	Namespace() uuid.UUID

	// Begin decides, in one atomic step, what happens to an intent: see
	// BeginOutcome. A record that is already settled is answered by a read
	// alone: Begin on the replay path writes nothing.
	Begin(ctx context.Context, req BeginRequest) (BeginResult, error)

	// StartAttempt records a new attempt before it runs: it closes the open
	// attempt with the given class and error, appends the new one and
	// extends the lease. It is fenced: a caller whose token is no longer the
	// record's gets ErrFenced and nothing is written.
	StartAttempt(ctx context.Context, req AttemptRequest) error

	// Renew extends the lease of a pending record the caller owns, from the
	// store's now by req.LeaseTTL, and returns the lease's new expiry. The
	// owner calls it while its attempt runs, so that only an owner that
	// stopped loses its lease. It is fenced like StartAttempt (ErrFenced
	// when the token is no longer the record's or the record is not
	// pending; nothing is written) and cheap: it need not be durable, since
	// a crash ends the lease anyway.
	Renew(ctx context.Context, req RenewRequest) (time.Time, error)

	// Complete records an intent's outcome. It is fenced like StartAttempt
	// and is always durable when it returns.
	Complete(ctx context.Context, c Completion) (Record, error)

	// Resolve lets an operator settle a pending or unknown intent as
	// succeeded or failed. It advances the fencing token, so a live owner
	// that later tries to complete gets ErrFenced. A settled record other
	// than unknown gives ErrNotResolvable. On a record awaiting approval it
	// records an approval or a rejection instead (see Resolution); an
	// approval past the deadline, or of another fingerprint, is refused.
	Resolve(ctx context.Context, key uuid.UUID, r Resolution) (Record, error)

	// Get returns the record for key, or ErrNotFound.
	Get(ctx context.Context, key uuid.UUID) (Record, error)

	// List yields the records matching f, newest (by Created) first. It may
	// hold a read transaction while the loop runs: do not write to the store
	// from inside the loop.
	List(ctx context.Context, f Filter) iter.Seq2[Record, error]

	// GC removes the expired records (see Expired: settled, known outcomes
	// past their TTL) and says how many it removed, or with DryRun how many
	// it would remove, and how many unknown or pending records past their
	// TTL it keeps (see Overdue).
	GC(ctx context.Context, opts GCOptions) (GCResult, error)

	// Stats counts the journal's records.
	Stats(ctx context.Context) (Stats, error)

	// Import writes a record as it is (from an export or another store),
	// keeping its state, attempts and times. A record already present with
	// the same key is left alone when it is identical and refused with
	// ErrExists otherwise.
	Import(ctx context.Context, r Record) error

	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// DefaultTTL is how long a record is kept when BeginRequest.RecordTTL is
// zero: longer than any retry, replay or operator horizon.
const DefaultTTL = 7 * 24 * time.Hour

// DefaultLeaseTTL is the owner's lease when BeginRequest.LeaseTTL or
// AttemptRequest.LeaseTTL is zero.
const DefaultLeaseTTL = time.Minute

// BeginRequest asks the store to begin (or answer) one intent.
type BeginRequest struct {
	Key         uuid.UUID
	Intent      keyderive.Intent
	Fingerprint keyderive.Fingerprint
	// Effect is the tool's effect kind, kept so that a restart preview
	// (agentctl replay) can say what a re-run would do.
	Effect Effect
	// Input is the canonical input to store; nil keeps the fingerprint only.
	Input []byte
	// Owner identifies the process that takes the lease.
	Owner string
	// AttemptID is the id of attempt 1, recorded when the record is new.
	AttemptID string
	// LeaseTTL is how long the owner's lease lasts; it must exceed the time
	// the owner needs to run the tool and complete. Zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RecordTTL is how long the record is kept; zero means DefaultTTL.
	RecordTTL time.Duration
	// Settle is how long after attempt 1 starts the downstream may still be
	// acting on it: the attempt's timeout plus the tool's settle window. It
	// is kept as the attempt's QuietAt; until then nobody takes the intent
	// over, even once the lease expired. Zero means no wait.
	Settle time.Duration
	// Durable asks that a new record be on disk before Begin returns (the
	// write-ahead of an Unkeyed tool). When false the store may return
	// before the write is durable; the record is still visible to every
	// later call on this Store, but may be lost in a crash.
	Durable bool
	// Guard is the scope of the suppression guard, consulted by every Begin
	// that could let the tool run (see GuardBlocks).
	Guard GuardScope
	// Retake, when set, is asked about a live settled record with a
	// matching fingerprint. If it returns true the record is taken over as
	// if it were pending with an expired lease: Begin answers TakenOver with
	// a new token, the state goes back to pending under the caller's lease,
	// and the attempts are kept. The harness uses it to run a Keyed or
	// Idempotent intent again after an unknown outcome, and an intent whose
	// last failure provably did not execute. It must be a pure function: it
	// may be called more than once.
	Retake func(r *Record) bool
	// Approvals, when positive, makes a new intent wait for that many
	// distinct approvers before it runs: Begin records it StateAwaiting,
	// with no attempt, and answers Held. It needs a Fingerprint, which
	// every approval must name.
	Approvals int
	// ApprovalTTL is how long a new intent awaits approval (its
	// Approval.Deadline from now); zero means the record's TTL.
	ApprovalTTL time.Duration
}

// GuardScope says where a recorded suppression blocks calls of the same
// tool whose input was altered.
type GuardScope uint8

const (
	// GuardTurn blocks the tool within the same (tenant, session, turn).
	// It is the zero value and the default.
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
	// Answered: the record is settled (succeeded, failed, suppressed or
	// unknown); answer from it and do not run the tool.
	Answered
	// Held: the record is pending and another owner's lease is live, or
	// the lease expired but the last attempt may still be acting downstream
	// (its QuietAt is ahead): nobody runs or reconciles the intent yet. Or
	// the record is StateAwaiting, not yet approved: nothing runs until it
	// is.
	Held
	// TakenOver: the record was pending with an expired lease, or awaiting
	// and approved (it has no attempt: nothing ran). The outcome
	// of the earlier attempts is unknown; the caller now owns the lease and
	// must decide by the tool's effect kind whether to start an attempt,
	// reconcile, or complete as unknown.
	TakenOver
	// Mismatch: a record exists for the key with a different fingerprint;
	// Record is that record, unchanged. The caller's intent is recorded as
	// suppressed under a key of its own, the UUIDv5 of its fingerprint in
	// the namespace of the key (once: a repeated mismatch finds it), so
	// that the guard blocks the same input under another key.
	Mismatch
	// Guarded: Begin would have let the tool run (a new record, a takeover
	// or a retake), but a suppression is recorded under another key for the
	// same tool within the guard's scope. Nothing was written; Record is the
	// suppressing record. A refused takeover or retake leaves the key's own
	// record as it was (pending, unknown, …): Get it to tell the caller the
	// truth about the earlier attempts.
	Guarded
)

// BeginResult is Begin's answer.
type BeginResult struct {
	Outcome BeginOutcome
	// Record is the record after Begin (for Guarded, the suppressing one).
	Record Record
	// Token is the fencing token the caller must present to StartAttempt
	// and Complete; set for Started and TakenOver.
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

// Resolution is an operator's verdict on an unknown intent.
//
// On a record awaiting approval it is a decision instead: State
// StatePending approves the intent (Fingerprint must be the record's, so
// that approving one input never runs another) and StateSuppressed
// rejects it; By is required.
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
	// Removed counts the expired records removed (with DryRun, that would
	// be removed).
	Removed int
	// KeptUnknown counts the unknown and pending records past their TTL,
	// kept until an operator resolves them.
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
	// OverdueUnknown counts the unknown and pending records past their TTL,
	// which GC keeps until an operator resolves them (see Overdue).
	OverdueUnknown int
	Oldest, Newest time.Time
	// SizeBytes is the size of the journal's file or table, where known.
	SizeBytes int64
}
