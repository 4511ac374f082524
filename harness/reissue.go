package harness

import (
	"strconv"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// Step is what a re-issued call of a recorded intent does: the answer to
// "what will my agent do with this intent if it calls it again now?". The
// call path, agentctl replay and anything that previews a journal ask
// ReissueStep; the rule lives there only.
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
	// StepAnew: the record holds a known outcome that has expired; the
	// call is a new intent and runs.
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

// ReissueStep says what a call of the intent recorded in rec would do at
// now, for a tool of the given effect kind (the registered tool's, or the
// kind the record keeps). It reads rec and never changes it.
//
// The rules, in order: a pending record whose lease is live, or whose last
// attempt may still be acting, is waited for; a known outcome (succeeded,
// failed, suppressed) past its TTL runs anew, while an unknown or pending
// one never expires into a re-run; a success is answered; a failure is run
// again only when it provably did not execute; a suppression is answered,
// except "still in progress downstream" (409), which asks again; an
// unknown outcome, an in-progress suppression and a pending record whose
// owner stopped are retried when the effect kind absorbs a repeat and
// reconciled when it is Unkeyed.
func ReissueStep(rec *journal.Record, effect journal.Effect, now time.Time) Step {
	if rec.State == journal.StatePending {
		if now.Before(rec.Lease.Expires) || stillActing(rec, now) {
			return StepWait
		}
		return afterMaybe(rec, effect)
	}
	if rec.State != journal.StateUnknown && !rec.Expires.IsZero() && !now.Before(rec.Expires) {
		return StepAnew
	}
	switch rec.State {
	case journal.StateSucceeded:
		return StepAnswer
	case journal.StateFailed:
		if classOf(rec.ErrorClass) == retryclass.NotExecuted {
			return StepRetry
		}
		return StepAnswer
	case journal.StateSuppressed:
		if classOf(rec.ErrorClass) == retryclass.InFlight {
			if stillActing(rec, now) {
				return StepWait
			}
			return afterMaybe(rec, effect)
		}
		return StepAnswer
	case journal.StateUnknown:
		if stillActing(rec, now) {
			return StepWait
		}
		return afterMaybe(rec, effect)
	}
	// A state this version does not know: answer what is recorded rather
	// than run anything.
	return StepAnswer
}

// afterMaybe decides for an intent whose earlier attempt may have executed:
// the effect kind says whether a repeat is absorbed.
func afterMaybe(rec *journal.Record, effect journal.Effect) Step {
	if lastAttemptClass(rec) == retryclass.NotExecuted {
		return StepRetry
	}
	if effect == journal.Unkeyed {
		return StepReconcile
	}
	return StepRetry
}

// stillActing reports whether an attempt of rec may still be acting
// downstream at now: the latest QuietAt of its attempts, as the journal
// judges a takeover, is ahead.
func stillActing(rec *journal.Record, now time.Time) bool {
	for _, a := range rec.Attempts {
		if now.Before(a.QuietAt) {
			return true
		}
	}
	return false
}

// lastAttemptClass is the class the last attempt was closed with; an
// attempt still open (or whose owner died) has none.
func lastAttemptClass(rec *journal.Record) retryclass.Class {
	if n := len(rec.Attempts); n > 0 {
		return classOf(rec.Attempts[n-1].Class)
	}
	return retryclass.Success
}

// classOf parses a recorded class; anything that is not a retry class (an
// operator's "resolved", a record from elsewhere) is Success, which no rule
// above treats as "provably not executed" or "in progress".
func classOf(s string) retryclass.Class {
	c, err := retryclass.ParseClass(s)
	if err != nil {
		return retryclass.Success
	}
	return c
}
