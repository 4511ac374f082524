package journal

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// SchemaVersion is the record schema this package writes (and reads up to).
const SchemaVersion = 1

// State is where an intent stands.
type State uint8

const (
	// StatePending: an attempt is running, or was when its owner stopped.
	StatePending State = iota + 1
	// StateSucceeded: the tool returned a result (Record.Output).
	StateSucceeded
	// StateFailed: a definite failure; nothing happened downstream.
	StateFailed
	// StateSuppressed: a 409/422-class stop the model cannot override.
	StateSuppressed
	// StateUnknown: an attempt may have happened and no answer was
	// recorded, until an operator resolves it.
	StateUnknown
	// StateAwaiting: the intent must be approved before it runs
	// (Record.Approval) and nothing has run.
	StateAwaiting
)

var stateNames = [...]string{"", "pending", "succeeded", "failed", "suppressed", "unknown", "awaiting"}

// String returns the state's lower-case name.
func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ParseState parses a state's name as String writes it.
func ParseState(name string) (State, error) {
	if i := slices.Index(stateNames[1:], name); i >= 0 {
		return State(i + 1), nil
	}
	return 0, errors.New("unknown state " + strconv.Quote(name) + " (want pending, succeeded, failed, suppressed, unknown or awaiting)")
}

// Settled reports whether s is an outcome (not pending nor awaiting).
func (s State) Settled() bool { return s >= StateSucceeded && s <= StateUnknown }

// Record is everything the journal knows about one intent.
type Record struct {
	// Version is the schema version the record was written with.
	Version     int
	Key         uuid.UUID
	Intent      keyderive.Intent
	Fingerprint keyderive.Fingerprint
	// Effect is the tool's effect kind as the harness declared it.
	Effect Effect
	// Input is the canonical input, or nil when only the fingerprint is kept.
	Input []byte
	State State
	// Output is the tool's result for StateSucceeded.
	Output []byte
	// ErrorClass and ErrorMessage describe a failed, suppressed or unknown
	// outcome.
	ErrorClass   string
	ErrorMessage string
	Attempts     []Attempt
	// Lease is the current owner's lease; meaningful while pending.
	Lease Lease
	// Resolution is an operator's verdict, or an approver's rejection.
	Resolution *Resolution
	// Approval is set on an intent that had to be approved before it ran.
	Approval *Approval
	Created  time.Time
	Updated  time.Time
	Expires  time.Time
}

// Approval is what an intent needs approved before it runs, and was given.
type Approval struct {
	// Need is how many distinct approvers must approve.
	Need int
	// Deadline ends the wait: an intent not started by then is suppressed.
	Deadline time.Time
	// Given are the approvals so far, in order (State StatePending).
	Given []Resolution
}

// Attempt is one try at executing an intent.
type Attempt struct {
	// ID is the attempt id sent downstream as a request id.
	ID    string
	Start time.Time
	// End is zero while the attempt runs (or when its owner died).
	End time.Time
	// Class is the retry class of the attempt's failure.
	Class string
	Error string
	// QuietAt is when the downstream can no longer be acting on the
	// attempt (start + Settle); zero means at once.
	QuietAt time.Time
}

// Lease says who owns a pending record and until when.
type Lease struct {
	Owner string
	// Token is the fencing token; it advances each time ownership changes.
	Token   uint64
	Expires time.Time
}

// Effect is a tool's effect kind: what may follow an unknown outcome.
type Effect uint8

const (
	// Unkeyed: the downstream has no protection. A maybe-executed attempt
	// is never retried: the tool's Reconcile hook is asked, else an
	// operator resolves it. The default.
	Unkeyed Effect = iota
	// ReadOnly: no side effect; not journaled unless harness.Tool.Journal.
	ReadOnly
	// Idempotent: naturally idempotent (a PUT-like upsert); run again after
	// an unknown outcome.
	Idempotent
	// Keyed: the downstream honours the idempotency key; run again with the
	// same key after an unknown outcome.
	Keyed
)

var effectNames = [...]string{"unkeyed", "read-only", "idempotent", "keyed"}

// String returns the effect kind's lower-case name.
func (e Effect) String() string {
	if int(e) < len(effectNames) {
		return effectNames[e]
	}
	return "effect(" + strconv.Itoa(int(e)) + ")"
}

// parseEffect parses an effect kind's name as String writes it.
func parseEffect(name string) (Effect, error) {
	if i := slices.Index(effectNames[:], name); i >= 0 {
		return Effect(i), nil
	}
	return 0, errors.New("unknown effect kind " + strconv.Quote(name) + " (want unkeyed, read-only, idempotent or keyed)")
}

// The class names the journal itself reads or writes: retryclass's names,
// spelled here since journal imports only keyderive (a harness test holds
// them equal).
const (
	// ClassNotExecuted: the attempt provably did not take effect.
	ClassNotExecuted = "not-executed"
	// ClassInFlight: the downstream was still processing the same key.
	ClassInFlight = "in-flight"
	// ClassMismatch: the key was already used with another input.
	ClassMismatch = "mismatch"
	// ClassResolved: closed, or failed, by an operator's Resolve.
	ClassResolved = "resolved"
)
