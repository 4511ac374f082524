// Package reissue is the journal's re-issue decision: what a call of a
// recorded intent does if it is made again now. Begin's state machine, the
// harness (its replay, its Retake, its takeover), the idempotency
// middleware and every preview of a journal (agentctl replay, the
// timeline) ask it; the rule lives here only.
package reissue

import (
	"strconv"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// Step is what a re-issued call of a recorded intent does: the answer to
// "what will my agent do with this intent if it calls it again now?".
type Step uint8

const (
	// Answer: answered from the record; the tool does not run.
	Answer Step = iota + 1
	// Retry: the tool runs again under the same key. The intent's
	// effect kind absorbs a repeat (Keyed, Idempotent, ReadOnly), or its
	// last attempt provably did not execute.
	Retry
	// Reconcile: an Unkeyed intent whose earlier attempt may have
	// executed. The tool's Reconcile hook is asked whether it did; the tool
	// runs only on a "did not happen". Without a hook the intent stays
	// unknown until an operator resolves it (agentctl resolve).
	Reconcile
	// Wait: another owner holds the lease, or the last attempt may
	// still be acting downstream (its settle window is open). The call
	// waits within the in-flight budget, then answers "in progress".
	Wait
	// Anew: the record holds a known outcome that has expired
	// (journal.Expired); the call is a new intent and runs.
	Anew
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
// failed, suppressed) past its TTL runs anew (journal.Expired), while an unknown
// or pending one, or one with no TTL recorded, never expires into a
// re-run; a success is answered; a failure is run again only when it
// provably did not execute; a suppression is answered, except "still in
// progress downstream" (409), which asks again; an unknown outcome, an
// in-progress suppression and a pending record whose owner stopped are
// retried when the effect kind absorbs a repeat and reconciled when it is
// Unkeyed.
//
// DecideBegin follows the same rules for what a store can decide alone:
// Anew is a new record, Wait of a pending record is Held, another
// step of a pending record is TakenOver, and a settled record is Answered
// unless BeginRequest.Retake (which the harness answers with Reissue)
// takes it over.
func Of(rec *journal.Record, effect journal.Effect, now time.Time) Step {
	if rec.State == journal.StatePending {
		if leaseLive(rec, now) || stillActing(rec, now) {
			return Wait
		}
		return afterMaybe(rec, effect)
	}
	if journal.Expired(rec, now) {
		return Anew
	}
	switch rec.State {
	case journal.StateSucceeded:
		return Answer
	case journal.StateFailed:
		if rec.ErrorClass == journal.ClassNotExecuted {
			return Retry
		}
		return Answer
	case journal.StateSuppressed:
		if rec.ErrorClass == journal.ClassInFlight {
			if stillActing(rec, now) {
				return Wait
			}
			return afterMaybe(rec, effect)
		}
		return Answer
	case journal.StateAwaiting:
		return Wait
	case journal.StateUnknown:
		if stillActing(rec, now) {
			return Wait
		}
		return afterMaybe(rec, effect)
	}
	// A state this version does not know: answer what is recorded rather
	// than run anything.
	return Answer
}

// Takeover is the step Reissue gives rec once nobody may still be
// acting on it (its lease expired, its settle window passed): Retry or
// Reconcile. The harness asks it about the record Begin handed over
// (TakenOver), whose lease is by then its own.
func Takeover(rec *journal.Record, effect journal.Effect) Step {
	return afterMaybe(rec, effect)
}

// LastAttemptNotExecuted reports whether rec's last attempt was closed as
// provably not executed (journal.ClassNotExecuted). An attempt still open, or
// whose owner died, was not.
func LastAttemptNotExecuted(rec *journal.Record) bool {
	n := len(rec.Attempts)
	return n > 0 && rec.Attempts[n-1].Class == journal.ClassNotExecuted
}

// afterMaybe decides for an intent whose earlier attempt may have executed:
// the effect kind says whether a repeat is absorbed. An approved intent
// with no attempt yet has nothing that may have executed.
func afterMaybe(rec *journal.Record, effect journal.Effect) Step {
	if len(rec.Attempts) == 0 && rec.Approval != nil || LastAttemptNotExecuted(rec) {
		return Retry
	}
	if effect == journal.Unkeyed {
		return Reconcile
	}
	return Retry
}

// leaseLive reports whether rec's owner still holds its lease at now.
func leaseLive(rec *journal.Record, now time.Time) bool {
	return now.Before(rec.Lease.Expires)
}

// stillActing reports whether an attempt of rec may still be acting
// downstream at now: the latest QuietAt of its attempts is ahead.
func stillActing(rec *journal.Record, now time.Time) bool {
	return now.Before(quietAt(rec))
}

// QuietAt is when no attempt of rec can still be acting downstream: the
// latest QuietAt of its attempts (zero when none declared a settle
// window). Until then nobody runs or reconciles the intent.
func QuietAt(rec *journal.Record) time.Time { return quietAt(rec) }

// Settling reports that Reissue waits for rec at now only because an
// earlier attempt's settle window is open: no owner holds a live lease (or
// the outcome is recorded), yet an attempt may still be acting downstream
// until QuietAt. A caller is then told that, not that the intent is in
// progress elsewhere.
func Settling(rec *journal.Record, now time.Time) bool {
	if rec.State == journal.StatePending && leaseLive(rec, now) {
		return false
	}
	return stillActing(rec, now)
}

// ClassReleased is the class of a failure that committed nothing by its
// handler's own account: the idempotency middleware's record of an HTTP
// handler that answered a server error it does not store, or that
// panicked inside the transaction that would have recorded its answer.
const ClassReleased = "released"

// The classes of an intent that awaited approval and was suppressed: an
// approver rejected it (the record's Resolution says who and why), or it
// had not started running by its deadline.
const (
	ClassRejected = "rejected"
	ClassExpired  = "approval-expired"
)

// Request is Of for an HTTP request that the idempotency middleware
// recorded in rec, sent again at now on the server's clock, under a TTL
// counted from the request's first run. The server has no Reconcile hook,
// and it answers from a record it read only what Begin would answer on
// the store's clock:
//
//   - Retry: rec failed having committed nothing (ClassReleased), or an
//     operator's failed verdict says its effect did not happen, or rec's
//     succeeded or failed answer is ttl past the start of the run that
//     gave it (the store may keep a slow handler's record longer). The
//     request runs again under its key: Begin is to retake rec.
//   - Anew: rec holds a known outcome that has expired in the store, or
//     expires within a minute of now (the margin allowed between the two
//     clocks): Begin decides.
//   - Answer: rec holds any other settled outcome, which answers the
//     request as recorded; an unknown one, or an operator's verdict, until
//     the store expires it.
//   - For a pending record, Of's step for an Unkeyed intent (Wait or
//     Reconcile): Begin holds it or hands it over.
//
// Whether rec's fingerprint matches the request's is Begin's question,
// asked before this one.
func Request(rec *journal.Record, now time.Time, ttl time.Duration) Step {
	switch {
	case rec.State == journal.StateFailed && (rec.ErrorClass == ClassReleased || rec.Resolution != nil):
		return Retry
	case rec.State == journal.StatePending:
		return Of(rec, journal.Unkeyed, now)
	case ttl > 0 && ranBefore(rec, now.Add(-ttl)):
		return Retry
	case journal.Expired(rec, now.Add(time.Minute)):
		return Anew
	}
	return Answer
}

// ranBefore reports whether rec is a succeeded or failed answer, not an
// operator's, whose last run started at or before t.
func ranBefore(rec *journal.Record, t time.Time) bool {
	n := len(rec.Attempts)
	return (rec.State == journal.StateSucceeded || rec.State == journal.StateFailed) &&
		rec.Resolution == nil && n > 0 && !t.Before(rec.Attempts[n-1].Start)
}

// quietAt is the latest QuietAt of r's attempts: until then an earlier
// attempt may still be acting downstream.
func quietAt(r *journal.Record) time.Time {
	var q time.Time
	for i := range r.Attempts {
		if r.Attempts[i].QuietAt.After(q) {
			q = r.Attempts[i].QuietAt
		}
	}
	return q
}
