// Package reissue is the journal's re-issue decision: what a call of a
// recorded intent does if it is made again now. Every caller (the state
// machine, the harness, the idempotency middleware, agentctl) asks it.
package reissue

import (
	"strconv"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// Step is what a re-issued call of a recorded intent does.
type Step uint8

const (
	// Answer: answered from the record; the tool does not run.
	Answer Step = iota + 1
	// Retry: the tool runs again under the same key: its effect kind
	// absorbs a repeat, or its last attempt provably did not execute.
	Retry
	// Reconcile: an Unkeyed intent whose earlier attempt may have
	// executed; its Reconcile hook is asked, and the tool runs only on a
	// "did not happen".
	Reconcile
	// Wait: another owner holds the lease, or the last attempt's settle
	// window is open.
	Wait
	// Anew: the record holds an expired known outcome (journal.Expired);
	// the call is a new intent.
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

// Of says what a call of the intent recorded in rec would do at now, for
// a tool of the given effect kind. In order: a live lease or an open
// settle window waits; an expired known outcome runs anew; a success is
// answered; a failure runs again only when it provably did not execute; a
// suppression is answered, except "in progress downstream"; an unknown
// outcome, an in-progress suppression and an abandoned pending record are
// retried when the effect kind absorbs a repeat, else reconciled.
// docs/design.md has the long form.
func Of(rec *journal.Record, effect journal.Effect, now time.Time) Step {
	if rec.State == journal.StatePending {
		if leaseLive(rec, now) || stillActing(rec, now) {
			return Wait
		}
		return Takeover(rec, effect)
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
			return Takeover(rec, effect)
		}
		return Answer
	case journal.StateAwaiting:
		return Wait
	case journal.StateUnknown:
		if stillActing(rec, now) {
			return Wait
		}
		return Takeover(rec, effect)
	}
	return Answer // a state this version does not know: nothing runs
}

// LastAttemptNotExecuted reports whether rec's last attempt was closed
// journal.ClassNotExecuted.
func LastAttemptNotExecuted(rec *journal.Record) bool {
	n := len(rec.Attempts)
	return n > 0 && rec.Attempts[n-1].Class == journal.ClassNotExecuted
}

// Takeover is Of's step for rec once nobody may still be acting on it
// (Retry or Reconcile): an intent whose earlier attempt may have executed
// is reconciled only when Unkeyed. An approved intent with no attempt yet
// has nothing that may have executed.
func Takeover(rec *journal.Record, effect journal.Effect) Step {
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

// stillActing reports whether an attempt of rec may still act at now.
func stillActing(rec *journal.Record, now time.Time) bool {
	return now.Before(QuietAt(rec))
}

// QuietAt is when no attempt of rec can still be acting downstream: the
// latest QuietAt of its attempts (zero when none declared one).
func QuietAt(rec *journal.Record) time.Time {
	var q time.Time
	for i := range rec.Attempts {
		if rec.Attempts[i].QuietAt.After(q) {
			q = rec.Attempts[i].QuietAt
		}
	}
	return q
}

// Settling reports that Of waits for rec at now only because an earlier
// attempt's settle window is open, not because an owner holds a live
// lease.
func Settling(rec *journal.Record, now time.Time) bool {
	if rec.State == journal.StatePending && leaseLive(rec, now) {
		return false
	}
	return stillActing(rec, now)
}

// ClassReleased is the class of a failure that committed nothing by its
// handler's own account (the idempotency middleware's 5xx, or a panic
// under InTx).
const ClassReleased = "released"

// The classes of an intent that awaited approval and was suppressed: an
// approver rejected it, or it had not started by its deadline.
const (
	ClassRejected = "rejected"
	ClassExpired  = "approval-expired"
)

// Request is Of for an HTTP request that the idempotency middleware
// recorded in rec, sent again at now, under a TTL counted from its run's
// start:
//
//   - Retry: rec failed committing nothing (ClassReleased), or by an
//     operator's verdict, or its succeeded or failed answer is ttl past
//     its run's start.
//   - Anew: rec holds a known outcome that expires within a minute of now
//     (the margin between the server's and the store's clocks).
//   - Answer: any other settled outcome.
//   - For a pending record, Of's step for an Unkeyed intent.
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

// ranBefore reports whether rec's own answer's run started by t.
func ranBefore(rec *journal.Record, t time.Time) bool {
	n := len(rec.Attempts)
	return (rec.State == journal.StateSucceeded || rec.State == journal.StateFailed) &&
		rec.Resolution == nil && n > 0 && !t.Before(rec.Attempts[n-1].Start)
}
