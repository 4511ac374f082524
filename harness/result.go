package harness

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// ToolCall is one tool call of the agent.
type ToolCall struct {
	// ID is the model's tool-call id, echoed in the Result; not in the key.
	ID string
	// Tenant, Session and Turn place the call: Turn is the user's message
	// that started the work, not the model round-trip.
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
	// (workflow steps with keys of their own); the input is still checked.
	StepKey string
}

// Status says what the intent's outcome is, as far as this call can tell.
type Status uint8

const (
	// Succeeded: the effect happened; Output is its result.
	Succeeded Status = iota + 1
	// Failed: a definite failure, and no attempt may have taken effect.
	Failed
	// Suppressed: a 409/422-class stop (the downstream refused, the key
	// was used with another input, or the guard refused it); the model
	// must neither retry nor alter the input.
	Suppressed
	// Unknown: an attempt may or may not have taken effect and nobody can
	// tell yet; it was not repeated.
	Unknown
	// InProgress: the action is under way, or its outcome is being checked
	// (the OutcomeError's Class is MaybeExecuted, CheckAt says when); a
	// re-issue is answered with its outcome.
	InProgress
	// Rejected: the call itself was refused and provably nothing started;
	// Err says why.
	Rejected
	// AwaitingApproval: the tool needs people's approval (Tool.Approvals)
	// and nothing ran; the OutcomeError's Message says what and how.
	AwaitingApproval
)

var statusNames = [...]string{"", "succeeded", "failed", "suppressed", "unknown", "in-progress", "rejected", "awaiting-approval"}

// String returns the status's lower-case name.
func (s Status) String() string {
	if int(s) < len(statusNames) && s != 0 {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Source says how a call learned its outcome.
type Source uint8

const (
	// NoSource: nothing ran and nothing was replayed for this call.
	NoSource Source = iota
	// Executed: this call's attempts ran the tool.
	Executed
	// Replayed: answered from the journal; the tool did not run.
	Replayed
	// Collapsed: the call joined an identical call running in this
	// process and shares its outcome.
	Collapsed
	// Reconciled: the tool's Reconcile hook confirmed an earlier attempt's
	// effect.
	Reconciled
)

var sourceNames = [...]string{"none", "executed", "replayed", "collapsed", "reconciled"}

// String returns the source's lower-case name.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "source(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a call ended with.
type Result struct {
	// CallID echoes ToolCall.ID.
	CallID string
	Tool   string
	// Status is the outcome; Source how this call learned it.
	Status Status
	Source Source
	// Output is the tool's result when Status is Succeeded.
	Output json.RawMessage
	// Err is nil when Status is Succeeded; otherwise an *OutcomeError, or
	// the reason a call was Rejected.
	Err error
	// Key is the idempotency key (zero when rejected before one was made).
	Key uuid.UUID
	// Attempts counts the tries recorded for the intent.
	Attempts int
}

// OK reports whether the intent's effect happened (now or earlier).
func (r Result) OK() bool { return r.Status == Succeeded && r.Err == nil }

// OutcomeError is an outcome other than success, the same whether it
// happened now or is replayed from the journal.
type OutcomeError struct {
	Tool string
	Key  uuid.UUID
	// Class is the retry class behind the outcome.
	Class retryclass.Class
	// Message is the tool's or downstream's error text, as recorded.
	Message string
	// Status is Failed, Suppressed, Unknown, InProgress or
	// AwaitingApproval.
	Status Status
	// Approval is, for a tool that needs approval, what the intent needs
	// and was given.
	Approval *journal.Approval
	// CheckAt is, for an InProgress outcome being checked, when the check
	// is due; zero when not known.
	CheckAt time.Time
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

// Unwrap returns the live cause of an outcome reached in this call.
func (e *OutcomeError) Unwrap() error { return e.cause }

// ForModel returns the text to hand the model as the tool's result: the
// output for a success, else words that depend only on the outcome.
func (r Result) ForModel() string {
	if r.OK() {
		if len(r.Output) == 0 {
			return "null"
		}
		return string(r.Output)
	}
	var oe *OutcomeError
	if e, ok := r.Err.(*OutcomeError); ok {
		oe = e
	}
	switch {
	case r.Status == AwaitingApproval && oe != nil:
		return "This action needs a person's approval before it runs, and it has not run: " + oe.Message + ". " +
			"Tell the user it awaits approval; do not start it another way or change its input. Calling this tool again with the same input runs it once approved, or says it was rejected (reference " + r.Key.String() + ")."
	case r.Status == Suppressed && oe != nil && oe.Approval != nil:
		return "This action was not run, and will not be: it needed approval, and " + oe.Message + ". " +
			"Do not retry it or change its input to get around that decision; tell the user (reference " + r.Key.String() + ")."
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
	case InProgress:
		if oe != nil && oe.Class == retryclass.MaybeExecuted {
			when := ""
			if !oe.CheckAt.IsZero() {
				when = " (from " + oe.CheckAt.UTC().Format(time.RFC3339) + ")"
			}
			return "The outcome of this action is being checked" + when + ": an attempt may have taken effect, and nothing is repeated before the check says it did not. " +
				"Do not retry it or change its input; calling this tool again with the same input returns its outcome once known (reference " + r.Key.String() + ")."
		}
		return "This action is under way and its outcome is not known yet. Do not change its input or start it another way; " +
			"calling this tool again with the same input returns its outcome (reference " + r.Key.String() + ")."
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
