package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// newAttemptID is the id of a new attempt: the owner and a count.
func (h *Harness) newAttemptID() string {
	return h.owner + "#" + strconv.FormatUint(h.attemptN.Add(1), 36)
}

// startAttempt records a new attempt, closing the one before it.
func (f *flight) startAttempt(ctx context.Context, id, prevClass, prevErr string) error {
	err := f.h.store.StartAttempt(context.WithoutCancel(ctx), journal.AttemptRequest{
		Key: f.p.d.Key, Token: f.token, ID: id, PrevClass: prevClass, PrevError: prevErr,
		LeaseTTL: f.p.tool.leaseTTL, Durable: f.p.tool.durable, Settle: f.p.tool.quiet,
	})
	if err == nil {
		f.tries++
	}
	return err
}

// execute runs attempts until one settles the intent.
func (f *flight) execute(ctx context.Context, attemptID string) Result {
	for {
		f.event(ctx, Event{Kind: EventAfterWriteAhead, Attempt: attemptID})
		var res Result
		var settled bool
		var v retryclass.Verdict
		var err error
		if f.p.tool.InTx != nil {
			res, settled, v, err = f.tryInTx(ctx, attemptID)
		} else {
			res, settled, v, err = f.tryFunc(ctx, attemptID)
		}
		if settled {
			return res
		}
		if v, res, settled = f.afterFailure(ctx, v, err); settled {
			return res
		}
		next, ok := f.retry(ctx, v, err)
		if !ok {
			return f.giveUp(ctx, v.Class, err)
		}
		attemptID = next
	}
}

// tryFunc runs one attempt: the result when it ended the call, else the
// failure and its verdict.
func (f *flight) tryFunc(ctx context.Context, attemptID string) (res Result, settled bool, v retryclass.Verdict, err error) {
	t := f.p.tool
	out, err, resent := f.h.invoke(ctx, t, f.p, attemptID)
	if err != nil {
		v = t.policy.Verdict(ctx, err)
		if resent && v.Class == retryclass.NotExecuted { // the first send may have acted
			v.Class = retryclass.MaybeExecuted
		}
	}
	f.event(ctx, Event{Kind: EventAfterEffect, Attempt: attemptID, Class: v.Class, Err: err})
	if err == nil {
		return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: out}, Succeeded, Executed, out, nil), true, v, nil
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		// Never retried; it may have struck after the effect.
		if t.Effect == journal.ReadOnly {
			return f.completeErr(ctx, journal.StateFailed, retryclass.Terminal, err), true, v, err
		}
		return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted, err), true, v, err
	}
	return Result{}, false, v, err
}

// invoke runs one attempt of the tool (guarded); resent is downstream.Resent's.
func (h *Harness) invoke(ctx context.Context, t *tool, p *prepared, attemptID string) (out json.RawMessage, err error, resent bool) {
	actx := h.attemptContext(ctx, t, p, attemptID)
	if pe := guarded(actx, t, func(actx context.Context) { out, err = t.Func(actx, p.call.Input) }); pe != nil {
		return nil, pe, false
	}
	return out, err, downstream.Resent(actx)
}

// guarded runs user code under the tool's timeout, returning a panic as a
// *PanicError; runtime.Goexit is not recovered.
func guarded(ctx context.Context, t *tool, fn func(context.Context)) (pe *PanicError) {
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			pe = newPanicError(t.Name, r)
		}
	}()
	fn(ctx)
	return nil
}

// attemptContext is the context a tool's attempt runs with.
func (h *Harness) attemptContext(ctx context.Context, t *tool, p *prepared, attemptID string) context.Context {
	c := p.call
	return downstream.NewContext(ctx, downstream.Attempt{Key: p.d.Key, ID: attemptID, Unkeyed: t.Effect == journal.Unkeyed,
		Call: downstream.Call{ID: c.ID, Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool, Discriminator: c.Discriminator}})
}

// tryInTx is tryFunc for an InTx effect, in the outcome's transaction.
func (f *flight) tryInTx(ctx context.Context, attemptID string) (res Result, settled bool, v retryclass.Verdict, err error) {
	t, tc := f.p.tool, f.h.store.(txCompleter)
	var effectErr error
	rec, err := tc.CompleteWith(context.WithoutCancel(ctx), f.p.d.Key, f.token,
		func(txCtx context.Context) (out []byte, err error) {
			actx := f.h.attemptContext(withValuesOf(ctx, txCtx), t, f.p, attemptID)
			if pe := guarded(actx, t, func(actx context.Context) { out, effectErr = t.InTx(actx, f.p.call.Input) }); pe != nil {
				effectErr = pe // rolled back, like any error of the effect
				return nil, pe
			}
			return out, effectErr
		})
	effectClass := retryclass.Success
	if effectErr != nil {
		effectClass = retryclass.NotExecuted // rolled back with its transaction
	}
	f.event(ctx, Event{Kind: EventAfterEffect, Attempt: attemptID, Class: effectClass, Err: effectErr})
	switch {
	case err == nil:
		f.event(ctx, Event{Kind: EventAfterOutcome})
		return f.answer(ctx, Result{Status: Succeeded, Source: Executed, Output: rec.Output}), true, v, nil
	case effectErr != nil && errors.Is(err, effectErr):
		return Result{}, false, f.inTxVerdict(ctx, err), err
	case errors.Is(err, journal.ErrOutcomeUncertain): // both committed or neither: the record tells
		if rec, gerr := f.h.store.Get(context.WithoutCancel(ctx), f.p.d.Key); gerr == nil {
			if rec.State == journal.StateSucceeded {
				return f.answer(ctx, Result{Status: Succeeded, Source: Executed, Output: rec.Output}), true, v, nil
			}
			if rec.State == journal.StatePending && rec.Lease.Token == f.token {
				err = retryclass.MarkNotExecuted(err)
				return Result{}, false, f.inTxVerdict(ctx, err), err
			}
		}
	}
	return f.lost(ctx, err, nil), true, v, nil
}

// withValuesOf returns a context that ends with ctx and has values' values.
func withValuesOf(ctx, values context.Context) context.Context {
	return valuesFrom{Context: ctx, values: values}
}

type valuesFrom struct {
	context.Context
	values context.Context
}

func (c valuesFrom) Value(key any) any { return c.values.Value(key) }

// inTxVerdict classifies the failure of an InTx effect (inTxClass).
func (f *flight) inTxVerdict(ctx context.Context, err error) retryclass.Verdict {
	v := f.p.tool.policy.Verdict(ctx, err)
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		v.Class = retryclass.Terminal // a bug: not retried
	case int(v.Class) < len(inTxClass):
		v.Class = inTxClass[v.Class]
	default:
		v.Class = retryclass.NotExecuted
	}
	return v
}

// afterFailure carries out failureTable's row for a failed attempt: the
// result when the call ends here, else the verdict to retry under.
func (f *flight) afterFailure(ctx context.Context, v retryclass.Verdict, err error) (retryclass.Verdict, Result, bool) {
	if v.Class == retryclass.Success { // an error is no success
		v.Class = retryclass.MaybeExecuted
	}
	if v.Class == retryclass.MaybeExecuted {
		f.mayHaveRun = true
	}
	rule := failureOf(f.p.tool.Effect, v.Class, f.mayHaveRun)
	switch rule.step {
	case recordNow:
		return v, f.completeErr(ctx, rule.state, rule.record, rule.message(err)), true
	case reconcileFirst: // never retried blindly: checked in the background
		if f.p.tool.Reconcile == nil {
			res, _ := f.reconcile(ctx, err) // records unknown: nobody to ask
			return v, res, true
		}
		return v, f.check(ctx, f.h.now().Add(f.p.tool.settle), func(ctx context.Context) Result {
			if res, ok := f.reconcileEarly(ctx, err); ok {
				return res
			}
			if !f.waitSettle(ctx) {
				return f.interrupted(ctx, err)
			}
			if res, settled := f.reconcile(ctx, err); settled {
				return res
			}
			v.Class = retryclass.NotExecuted
			next, ok := f.retry(ctx, v, err)
			if !ok {
				return f.giveUp(ctx, v.Class, err)
			}
			return f.execute(ctx, next)
		}), true
	}
	return v, Result{}, false
}

// retry waits out the backoff for a retryable failure and records the next
// attempt; ok is false when the budget is spent or the caller left.
func (f *flight) retry(ctx context.Context, v retryclass.Verdict, err error) (attemptID string, ok bool) {
	delay, ok := f.schedule().Next(ctx, v)
	if !ok {
		return "", false
	}
	f.event(ctx, Event{Kind: EventRetry, Class: v.Class, Delay: delay, Err: err})
	if retryclass.Wait(ctx, delay) != nil {
		return "", false
	}
	attemptID = f.h.newAttemptID()
	if serr := f.startAttempt(ctx, attemptID, v.Class.String(), err.Error()); serr != nil {
		return "", false
	}
	return attemptID, true
}

// giveUp records failureTable's outcome once the retry budget is spent.
func (f *flight) giveUp(ctx context.Context, c retryclass.Class, err error) Result {
	rule := failureOf(f.p.tool.Effect, c, f.mayHaveRun)
	return f.completeErr(ctx, rule.state, rule.record, rule.message(err))
}

// runUnjournaled runs a ReadOnly tool that is not journaled.
func (h *Harness) runUnjournaled(ctx context.Context, p *prepared) Result {
	t := p.tool
	f := h.newFlight(p)
	for {
		id := h.newAttemptID()
		f.tries++
		out, err, _ := h.invoke(ctx, t, p, id)
		if err == nil {
			return f.answer(ctx, Result{Status: Succeeded, Source: Executed, Output: out})
		}
		v := t.policy.Verdict(ctx, err)
		delay, ok := f.schedule().Next(ctx, v)
		if ok && v.Class.Retryable() {
			f.event(ctx, Event{Kind: EventRetry, Class: v.Class, Delay: delay, Err: err})
			if retryclass.Wait(ctx, delay) == nil {
				continue
			}
		}
		return f.answer(ctx, Result{Status: Failed, Source: Executed,
			Err: &OutcomeError{Tool: t.Name, Key: p.d.Key, Class: v.Class, Status: Failed, Message: err.Error(), cause: err}})
	}
}

// failureStep is what the flight does right after a failed attempt.
type failureStep uint8

const (
	// retryAttempt: run again under the same key while the retry budget
	// lasts; once it is spent, record the row's outcome.
	retryAttempt failureStep = iota + 1
	// reconcileFirst: wait out the settle window and ask the Reconcile
	// hook; a confirmed DidNotHappen is retried as not-executed.
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

// ran is a row's flight.mayHaveRun column.
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
	wrap   string // when set, the format that wraps the recorded error
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
// attempt may have executed, and the tool's effect kind; first match wins.
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

// failureOf is failureTable's row for class c and effect kind e.
func failureOf(e journal.Effect, c retryclass.Class, mayHaveRun bool) failureRule {
	if c == retryclass.Success {
		c = retryclass.MaybeExecuted
	}
	for _, r := range failureTable {
		if r.class == c && r.ran.holds(mayHaveRun) && r.effect.has(e) {
			return r
		}
	}
	// A class this version does not know: retried, then unknown.
	return failureRule{class: c, effect: allKinds, step: retryAttempt, state: journal.StateUnknown, record: c}
}

// message is the recorded error for an attempt that failed with err.
func (r failureRule) message(err error) error {
	if r.wrap == "" {
		return err
	}
	return fmt.Errorf(r.wrap, err)
}

// inTxClass is the class of a rolled-back InTx effect's failure.
var inTxClass = [...]retryclass.Class{
	retryclass.Success:       retryclass.NotExecuted,
	retryclass.NotExecuted:   retryclass.NotExecuted,
	retryclass.MaybeExecuted: retryclass.NotExecuted,
	retryclass.InFlight:      retryclass.InFlight,
	retryclass.Mismatch:      retryclass.Mismatch,
	retryclass.Terminal:      retryclass.Terminal,
	retryclass.Canceled:      retryclass.NotExecuted,
}
