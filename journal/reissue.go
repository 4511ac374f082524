package journal

import (
	"strconv"
	"time"
)

// This file is the re-issue decision: what a call of a recorded intent
// does if it is made again now. DecideBegin, the harness (its replay fast
// path, its Retake, its takeover) and every preview of a journal
// (agentctl replay, the timeline) ask Reissue; the rule lives here only.

// The class names a record's ErrorClass and Attempt.Class hold that the
// journal itself reads or writes. They are retryclass's names (its
// Class.String); journal may import only keyderive (docs/design.md), so
// they are spelled once here, and a test in harness checks that the two
// agree.
const (
	// ClassNotExecuted: the attempt provably did not take effect.
	ClassNotExecuted = "not-executed"
	// ClassInFlight: the downstream was still processing the same key.
	ClassInFlight = "in-flight"
	// ClassMismatch: the key was already used with another input.
	ClassMismatch = "mismatch"
	// ClassResolved is not a retry class: the class of an attempt closed,
	// and of a failure recorded, by an operator's Resolve.
	ClassResolved = "resolved"
)

// Step is what a re-issued call of a recorded intent does: the answer to
// "what will my agent do with this intent if it calls it again now?".
type Step uint8

const (
	// StepAnswer: answered from the record; the tool does not run.
	StepAnswer Step = iota + 1
	// StepRetry: the tool runs again under the same key. The intent's
	// effect kind absorbs a repeat (Keyed, Idempotent, ReadOnly), or its
	// last attempt provably did not execute.
	StepRetry
	// StepReconcile: an Unkeyed intent whose earlier attempt may have
	// executed. The tool's Reconcile hook is asked whether it did; the tool
	// runs only on a "did not happen". Without a hook the intent stays
	// unknown until an operator resolves it (agentctl resolve).
	StepReconcile
	// StepWait: another owner holds the lease, or the last attempt may
	// still be acting downstream (its settle window is open). The call
	// waits within the in-flight budget, then answers "in progress".
	StepWait
	// StepAnew: the record holds a known outcome that has expired
	// (Expired); the call is a new intent and runs.
	StepAnew
)

var stepNames = [...]string{"", "answer", "retry", "reconcile", "wait", "anew"}

// String returns the step's lower-case name.
func (s Step) String() string {
	if s != 0 && int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "step(" + strconv.Itoa(int(s)) + ")"
}

// Reissue says what a call of the intent recorded in rec would do at now,
// for a tool of the given effect kind (the registered tool's, or the kind
// the record keeps). It reads rec and never changes it.
//
// The rules, in order: a pending record whose lease is live, or whose last
// attempt may still be acting, is waited for; a known outcome (succeeded,
// failed, suppressed) past its TTL runs anew (Expired), while an unknown
// or pending one, or one with no TTL recorded, never expires into a
// re-run; a success is answered; a failure is run again only when it
// provably did not execute; a suppression is answered, except "still in
// progress downstream" (409), which asks again; an unknown outcome, an
// in-progress suppression and a pending record whose owner stopped are
// retried when the effect kind absorbs a repeat and reconciled when it is
// Unkeyed.
//
// DecideBegin follows the same rules for what a store can decide alone:
// StepAnew is a new record, StepWait of a pending record is Held, another
// step of a pending record is TakenOver, and a settled record is Answered
// unless BeginRequest.Retake (which the harness answers with Reissue)
// takes it over.
func Reissue(rec *Record, effect Effect, now time.Time) Step {
	if rec.State == StatePending {
		if leaseLive(rec, now) || stillActing(rec, now) {
			return StepWait
		}
		return afterMaybe(rec, effect)
	}
	if Expired(rec, now) {
		return StepAnew
	}
	switch rec.State {
	case StateSucceeded:
		return StepAnswer
	case StateFailed:
		if rec.ErrorClass == ClassNotExecuted {
			return StepRetry
		}
		return StepAnswer
	case StateSuppressed:
		if rec.ErrorClass == ClassInFlight {
			if stillActing(rec, now) {
				return StepWait
			}
			return afterMaybe(rec, effect)
		}
		return StepAnswer
	case StateUnknown:
		if stillActing(rec, now) {
			return StepWait
		}
		return afterMaybe(rec, effect)
	}
	// A state this version does not know: answer what is recorded rather
	// than run anything.
	return StepAnswer
}

// TakeoverStep is the step Reissue gives rec once nobody may still be
// acting on it (its lease expired, its settle window passed): StepRetry or
// StepReconcile. The harness asks it about the record Begin handed over
// (TakenOver), whose lease is by then its own.
func TakeoverStep(rec *Record, effect Effect) Step {
	return afterMaybe(rec, effect)
}

// LastAttemptNotExecuted reports whether rec's last attempt was closed as
// provably not executed (ClassNotExecuted). An attempt still open, or
// whose owner died, was not.
func LastAttemptNotExecuted(rec *Record) bool {
	n := len(rec.Attempts)
	return n > 0 && rec.Attempts[n-1].Class == ClassNotExecuted
}

// afterMaybe decides for an intent whose earlier attempt may have executed:
// the effect kind says whether a repeat is absorbed.
func afterMaybe(rec *Record, effect Effect) Step {
	if LastAttemptNotExecuted(rec) {
		return StepRetry
	}
	if effect == Unkeyed {
		return StepReconcile
	}
	return StepRetry
}

// leaseLive reports whether rec's owner still holds its lease at now.
func leaseLive(rec *Record, now time.Time) bool {
	return now.Before(rec.Lease.Expires)
}

// stillActing reports whether an attempt of rec may still be acting
// downstream at now: the latest QuietAt of its attempts is ahead.
func stillActing(rec *Record, now time.Time) bool {
	return now.Before(quietAt(rec))
}

// QuietAt is when no attempt of rec can still be acting downstream: the
// latest QuietAt of its attempts (zero when none declared a settle
// window). Until then nobody runs or reconciles the intent.
func QuietAt(rec *Record) time.Time { return quietAt(rec) }

// Settling reports that Reissue waits for rec at now only because an
// earlier attempt's settle window is open: no owner holds a live lease (or
// the outcome is recorded), yet an attempt may still be acting downstream
// until QuietAt. A caller is then told that, not that the intent is in
// progress elsewhere.
func Settling(rec *Record, now time.Time) bool {
	if rec.State == StatePending && leaseLive(rec, now) {
		return false
	}
	return stillActing(rec, now)
}

// ClassReleased is the class of a failure that committed nothing by its
// handler's own account: the idempotency middleware's record of an HTTP
// handler that answered a server error it does not store, or that
// panicked inside the transaction that would have recorded its answer.
const ClassReleased = "released"

// RequestStep is Reissue for an HTTP request that the idempotency
// middleware recorded in rec, sent again at now on the server's clock. The
// server has no Reconcile hook, and it answers from a record it read only
// what Begin would answer on the store's clock:
//
//   - StepRetry: rec failed having committed nothing (ClassReleased), or
//     an operator's failed verdict says its effect did not happen. The
//     request runs again under its key: Begin is to retake rec.
//   - StepAnew: rec holds a known outcome that has expired, or expires
//     within a minute of now (the margin allowed between the two clocks):
//     Begin decides.
//   - StepAnswer: rec holds any other settled outcome, which answers the
//     request as recorded; an unknown one until an operator resolves it.
//   - For a pending record, Reissue's step for an Unkeyed intent (StepWait
//     or StepReconcile): Begin holds it or hands it over.
//
// Whether rec's fingerprint matches the request's is Begin's question,
// asked before this one.
func RequestStep(rec *Record, now time.Time) Step {
	switch {
	case rec.State == StateFailed && (rec.ErrorClass == ClassReleased || rec.Resolution != nil):
		return StepRetry
	case rec.State == StatePending:
		return Reissue(rec, Unkeyed, now)
	case Expired(rec, now.Add(time.Minute)):
		return StepAnew
	}
	return StepAnswer
}
