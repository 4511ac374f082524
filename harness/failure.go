package harness

import (
	"fmt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// This file is what a failed attempt becomes, as data: one table, read
// top to bottom, first match wins.

// failureStep is what the flight does right after a failed attempt.
type failureStep uint8

const (
	// retryAttempt: run again under the same key while the retry budget
	// lasts; once it is spent, record the row's outcome.
	retryAttempt failureStep = iota + 1
	// reconcileFirst: wait out the settle window and ask the Reconcile
	// hook; Happened and CannotTell settle the call, DidNotHappen makes the
	// attempt not-executed and it is retried as such.
	reconcileFirst
	// recordNow: record the row's outcome; no retry.
	recordNow
)

// effects is a set of effect kinds, for a row that holds for several.
type effects uint8

func kinds(es ...journal.Effect) effects {
	var s effects
	for _, e := range es {
		s |= 1 << e
	}
	return s
}

func (s effects) has(e journal.Effect) bool { return s&(1<<e) != 0 }

// ran is a row's may-have-executed column: whether an attempt of the intent
// may already have taken effect (flight.mayHaveRun).
type ran uint8

const (
	ranAny ran = iota
	ranNo
	ranYes
)

func (r ran) holds(mayHaveRun bool) bool {
	return r == ranAny || (r == ranYes) == mayHaveRun
}

// failureRule is one row of failureTable.
type failureRule struct {
	class  retryclass.Class
	ran    ran
	effect effects
	step   failureStep
	// state and record are the outcome recorded: now (recordNow), or once
	// the retry budget is spent.
	state  journal.State
	record retryclass.Class
	// wrap, when set, is the format ("%w" and the words) that wraps the
	// attempt's error in the recorded message.
	wrap string
}

var (
	allKinds = kinds(journal.Unkeyed, journal.ReadOnly, journal.Idempotent, journal.Keyed)
	absorb   = kinds(journal.Idempotent, journal.Keyed) // the downstream absorbs a repeat
	unkeyed  = kinds(journal.Unkeyed)
	readOnly = kinds(journal.ReadOnly)
)

const (
	refusedWrap = "the downstream refused a retry of an action that may already have happened: %w"
	earlierWrap = "%w; an earlier attempt may have taken effect"
)

// failureTable is what a failed attempt becomes, by its class, whether an
// attempt of the intent may have executed, and the tool's effect kind.
// A classifier's Success for an error is read as MaybeExecuted (an error
// with no output cannot be recorded as a result), and a MaybeExecuted
// attempt makes the intent one that may have run, before the table is
// read. An InTx tool's classes are first mapped by inTxClass. A refusal
// (Terminal) after an attempt that may have run is never "nothing was
// done".
var failureTable = []failureRule{
	// class                   may have run  effect    step            recorded state          class                     wrap
	{retryclass.NotExecuted, ranNo, allKinds, retryAttempt, journal.StateFailed, retryclass.NotExecuted, ""},
	{retryclass.NotExecuted, ranYes, allKinds, retryAttempt, journal.StateUnknown, retryclass.MaybeExecuted, earlierWrap},
	{retryclass.MaybeExecuted, ranAny, unkeyed, reconcileFirst, journal.StateUnknown, retryclass.MaybeExecuted, ""},
	{retryclass.MaybeExecuted, ranAny, allKinds, retryAttempt, journal.StateUnknown, retryclass.MaybeExecuted, ""},
	{retryclass.InFlight, ranAny, allKinds, retryAttempt, journal.StateSuppressed, retryclass.InFlight, ""},
	{retryclass.Terminal, ranNo, allKinds, recordNow, journal.StateFailed, retryclass.Terminal, ""},
	{retryclass.Terminal, ranYes, unkeyed, recordNow, journal.StateUnknown, retryclass.MaybeExecuted, refusedWrap},
	{retryclass.Terminal, ranYes, readOnly, recordNow, journal.StateFailed, retryclass.Terminal, refusedWrap},
	{retryclass.Terminal, ranYes, absorb, recordNow, journal.StateSuppressed, retryclass.Mismatch, refusedWrap},
	{retryclass.Mismatch, ranAny, allKinds, recordNow, journal.StateSuppressed, retryclass.Mismatch, ""},
	{retryclass.Canceled, ranAny, allKinds, recordNow, journal.StateUnknown, retryclass.Canceled, ""},
}

// failureOf is the row of failureTable for an attempt of class c of an
// intent of effect kind e.
func failureOf(e journal.Effect, c retryclass.Class, mayHaveRun bool) failureRule {
	if c == retryclass.Success {
		c = retryclass.MaybeExecuted
	}
	for _, r := range failureTable {
		if r.class == c && r.ran.holds(mayHaveRun) && r.effect.has(e) {
			return r
		}
	}
	// A class this version does not know: retried as a retryable failure
	// would be, and unknown once the budget is spent.
	return failureRule{class: c, effect: allKinds, step: retryAttempt, state: journal.StateUnknown, record: c}
}

// message is the recorded error for an attempt that failed with err.
func (r failureRule) message(err error) error {
	if r.wrap == "" {
		return err
	}
	return fmt.Errorf(r.wrap, err)
}

// inTxClass is the class a failure of an InTx effect has, whose
// transaction rolled back with it: nothing happened, whatever the error
// says, so only a definite refusal, a mismatch and "in progress elsewhere"
// keep their class. (A panic in the effect is Terminal: a bug, not
// retried.)
var inTxClass = [...]retryclass.Class{
	retryclass.Success:       retryclass.NotExecuted,
	retryclass.NotExecuted:   retryclass.NotExecuted,
	retryclass.MaybeExecuted: retryclass.NotExecuted,
	retryclass.InFlight:      retryclass.InFlight,
	retryclass.Mismatch:      retryclass.Mismatch,
	retryclass.Terminal:      retryclass.Terminal,
	retryclass.Canceled:      retryclass.NotExecuted,
}
