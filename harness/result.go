package harness

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/retryclass"
)

// Call is one tool call of the agent.
type Call struct {
	// ID is the model's tool-call id; it is echoed in the Result and plays
	// no part in the key (models give every retry a new id).
	ID string
	// Tenant, Session and Turn place the call: Turn is the index or id of
	// the user's message that started the work, not the model round-trip.
	Tenant  string
	Session string
	Turn    string
	// Tool is the registered tool's name.
	Tool string
	// Input is the tool's JSON input as the model wrote it.
	Input json.RawMessage
	// Discriminator makes a second, deliberate identical intent in one turn
	// distinct (a sequence number, a user-given request id).
	Discriminator string
	// StepKey, when set, is the key's identity instead of the intent fields
	// (workflow steps with keys of their own). The input's fingerprint is
	// still checked: the same step key with a different input is
	// suppressed as a mismatch.
	StepKey string
}

// Status says what happened to a call.
type Status uint8

const (
	// Executed: the tool ran in this call and its outcome was recorded.
	Executed Status = iota + 1
	// Replayed: the outcome was answered from the journal; the tool did not
	// run.
	Replayed
	// Collapsed: the call joined an identical call running at the same time
	// in this process and shares its result; the tool ran once.
	Collapsed
	// Suppressed: a 409/422-class stop. The action was not repeated; the
	// model must neither retry nor alter the input.
	Suppressed
	// Unknown: an attempt may or may not have taken effect and nobody knows.
	// It was not repeated.
	Unknown
	// Failed: a definite failure. Nothing happened downstream; the model
	// may correct its input (a new intent).
	Failed
	// Rejected: the call itself was wrong (unknown tool, invalid or
	// oversize input, closed harness) or the journal failed. Nothing was
	// recorded and the tool did not run.
	Rejected
)

var statusNames = [...]string{"", "executed", "replayed", "collapsed", "suppressed", "unknown", "failed", "rejected"}

// String returns the status's lower-case name.
func (s Status) String() string {
	if int(s) < len(statusNames) && s != 0 {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a call ended with.
type Result struct {
	// CallID echoes Call.ID.
	CallID string
	Tool   string
	Status Status
	// Output is the tool's result when it succeeded (Executed, Replayed or
	// Collapsed with a nil Err).
	Output json.RawMessage
	// Err is the failure: an *OutcomeError for recorded failed, suppressed
	// and unknown outcomes, or the reason a call was Rejected.
	Err error
	// Key is the idempotency key (zero when the call was rejected before
	// one was derived).
	Key uuid.UUID
	// Attempts counts the tries recorded for the intent.
	Attempts int
	// FromJournal reports that the outcome was answered from the journal
	// (recorded by an earlier call) rather than reached in this call.
	FromJournal bool
}

// OK reports whether the call's tool succeeded (now or earlier).
func (r Result) OK() bool {
	return r.Err == nil && (r.Status == Executed || r.Status == Replayed || r.Status == Collapsed)
}

// OutcomeError is a recorded outcome other than success: what the model and
// the caller learn about a failed, suppressed or unknown intent. It is the
// same whether the outcome happened now or is replayed from the journal.
type OutcomeError struct {
	Tool string
	Key  uuid.UUID
	// Class is the retry class behind the outcome.
	Class retryclass.Class
	// Message is the tool's or downstream's error text, as recorded.
	Message string
	// Status is Failed, Suppressed or Unknown.
	Status Status
	// cause is the live error, when the outcome happened in this call.
	cause error
}

// Error says which tool, the outcome, its class and the recorded message.
func (e *OutcomeError) Error() string {
	s := "tool " + e.Tool + ": " + e.Status.String()
	if e.Class != retryclass.Success {
		s += " (" + e.Class.String() + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the live cause when the outcome happened in this call; a
// replayed outcome has none.
func (e *OutcomeError) Unwrap() error { return e.cause }

// ForModel returns the text to hand the model as the tool's result. It
// depends only on the recorded outcome, so a replay shows the model the same
// text as the first answer.
func (r Result) ForModel() string {
	switch r.Status {
	case Executed, Replayed, Collapsed:
		if r.Err == nil {
			if len(r.Output) == 0 {
				return "null"
			}
			return string(r.Output)
		}
	}
	var oe *OutcomeError
	if e, ok := r.Err.(*OutcomeError); ok {
		oe = e
	}
	switch r.Status {
	case Suppressed:
		v := retryclass.Verdict{Class: retryclass.Mismatch}
		if oe != nil {
			v.Class = oe.Class
		}
		return retryclass.SuppressionText(v)
	case Unknown:
		return "The outcome of this action is unknown: it may or may not have taken effect, and it was not repeated. " +
			"Do not retry it or change its input. Tell the user it needs checking (reference " + r.Key.String() + ")."
	case Rejected:
		return "The tool call was rejected and did not run: " + errText(r.Err)
	}
	msg := errText(r.Err)
	if oe != nil {
		msg = oe.Message
	}
	return "The tool failed and nothing was done: " + msg
}

func errText(err error) string {
	if err == nil {
		return "no detail"
	}
	return err.Error()
}
