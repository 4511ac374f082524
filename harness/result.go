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

// Status says what the intent's outcome is, as far as this call can tell:
// what the caller and the model should act on. Source says how the call
// learned it.
type Status uint8

const (
	// Succeeded: the effect happened; Output is its result.
	Succeeded Status = iota + 1
	// Failed: a definite failure, and no attempt of the intent may have
	// taken effect. The model may correct its input (a new intent).
	Failed
	// Suppressed: a 409/422-class stop (the downstream refused, the key
	// was used with another input, or the guard refused an altered input).
	// The action was not repeated; the model must neither retry nor alter
	// the input.
	Suppressed
	// Unknown: an attempt may or may not have taken effect and nobody can
	// tell yet. It was not repeated; a re-issue asks the tool's Reconcile
	// hook again where it has one, else an operator resolves it.
	Unknown
	// InProgress: the action is under way (this caller left after it
	// started, or another owner is running it) or its outcome is being
	// checked (an Unkeyed attempt may have taken effect: the harness waits
	// out its settle window and asks Reconcile, in the background; the
	// OutcomeError's Class is MaybeExecuted and CheckAt says when), and
	// its outcome is not known yet. Nothing is repeated meanwhile; a
	// re-issue is answered with its outcome.
	InProgress
	// Rejected: the call itself was refused (unknown tool, invalid or
	// oversize input, closed harness, a journal failure before anything
	// was written). Provably nothing started; Err says why. A caller that
	// leaves its flight before anything was recorded is told InProgress:
	// the flight goes on and may still start.
	Rejected
	// AwaitingApproval: the tool needs people's approval (Tool.Approvals)
	// and nothing ran; the OutcomeError's Approval and Message say what it
	// needs, by when, and the command an approver runs. A re-issue after
	// the approvals runs it once; after a rejection or the deadline it is
	// Suppressed, with the reason and who decided.
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

// Source says how a call learned its outcome. The zero value, NoSource,
// means the tool did not run for this call and no recorded outcome was
// read: a rejection, a refusal by the guard or a key mismatch, or a wait
// on another owner.
type Source uint8

const (
	// NoSource: nothing ran and nothing was replayed (see Source).
	NoSource Source = iota
	// Executed: this call's attempts ran the tool and reached the outcome.
	Executed
	// Replayed: the outcome was recorded by an earlier call and answered
	// from the journal; the tool did not run.
	Replayed
	// Collapsed: the call joined an identical call (same key, same input)
	// running at the same time in this process and shares its outcome; the
	// tool ran once.
	Collapsed
	// Reconciled: an earlier attempt's effect was confirmed by the tool's
	// Reconcile hook; the tool did not run again.
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
	// Err is nil when Status is Succeeded; otherwise an *OutcomeError for a
	// recorded or reached outcome (failed, suppressed, unknown, in
	// progress), or the reason a call was Rejected.
	Err error
	// Key is the idempotency key (zero when the call was rejected before
	// one was derived).
	Key uuid.UUID
	// Attempts counts the tries recorded for the intent.
	Attempts int
}

// OK reports whether the intent's effect happened (now or earlier).
func (r Result) OK() bool { return r.Status == Succeeded && r.Err == nil }

// OutcomeError is an outcome other than success: what the model and the
// caller learn about a failed, suppressed, unknown or in-progress intent.
// It is the same whether the outcome happened now or is replayed from the
// journal.
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
	// Approval is, for a tool that needs approval (awaiting it, or
	// suppressed by a rejection or its deadline), what the intent needs
	// and was given: the deadline, and who approved.
	Approval *journal.Approval
	// CheckAt is, for an InProgress outcome being checked (Class
	// MaybeExecuted: an attempt may have taken effect), when the check is
	// due: the end of the settle window. Zero when it is not known.
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

// Unwrap returns the live cause when the outcome happened in this call; a
// replayed outcome has none.
func (e *OutcomeError) Unwrap() error { return e.cause }

// ForModel returns the text to hand the model as the tool's result. It
// depends only on the outcome, so a replay shows the model the same text as
// the first answer. A success is the output itself, however it was learned
// (Source tells the caller, not the model, whether it was reconciled).
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
