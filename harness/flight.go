package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/lease"
	"github.com/agentonce/agentonce/retryclass"
)

// flight is the state of one execution of an intent.
type flight struct {
	h     *Harness
	p     *prepared
	token uint64
	tries int
	// mayHaveRun says an attempt of the intent may have taken effect (one
	// ended maybe-executed or canceled, or the intent was taken over from
	// an attempt that never reported): from then on a refusal of a retry
	// is not "nothing was done".
	mayHaveRun bool
	sched      *retryclass.Schedule // made on first need: the replay path has none
	base       Event
	lease      *lease.Keeper // set while this flight owns the intent
	// detached says the flight went on as a background check (check.go):
	// from then on only that goroutine uses the flight, and its answer is
	// the check's, not a call's.
	detached bool
	// waitUntil ends the caller's wait for an outcome being checked
	// (Options.CheckWait); set on first need.
	waitUntil time.Time
}

// newFlight is the flight of the prepared call p: the one place a flight
// is made, whether it will own the intent, wait for it or answer it from
// the journal.
func (h *Harness) newFlight(p *prepared) *flight {
	return &flight{h: h, p: p, base: p.event()}
}

func (f *flight) schedule() *retryclass.Schedule {
	if f.sched == nil {
		f.sched = f.p.tool.policy.NewSchedule()
	}
	return f.sched
}

// run drives a journaled call: Begin decides, and the flight executes,
// takes over, waits or answers.
func (h *Harness) run(ctx context.Context, p *prepared) Result {
	t := p.tool
	f := h.newFlight(p)
	req := journal.BeginRequest{
		Key:         p.d.Key,
		Intent:      intentOf(p.call),
		Fingerprint: p.d.Fingerprint,
		Effect:      t.Effect,
		Owner:       h.owner,
		AttemptID:   h.newAttemptID(),
		LeaseTTL:    t.leaseTTL,
		RecordTTL:   h.opts.RecordTTL,
		Durable:     t.durable,
		Guard:       h.opts.Guard,
		Retake:      t.retakeFn,
		Settle:      t.quiet,
	}
	if !h.opts.FingerprintOnly {
		req.Input = p.d.Canonical
	}
	f.event(ctx, EventBeforeWriteAhead, nil)
	for {
		br, err := h.store.Begin(ctx, req)
		if err != nil {
			return f.answer(ctx, Result{Status: Rejected,
				Err: fmt.Errorf("harness: tool %q key %s: journal: %w", t.Name, p.d.Key, err)})
		}
		switch br.Outcome {
		case journal.Answered:
			return f.answer(ctx, f.fromRecord(br.Record))
		case journal.Mismatch:
			return f.answer(ctx, f.suppressed(retryclass.Mismatch, len(br.Record.Attempts),
				"this key was already used with a different input (fingerprint mismatch)"))
		case journal.Guarded:
			return f.answer(ctx, f.suppressed(retryclass.Mismatch, 0,
				fmt.Sprintf("an earlier call of %s in this turn was suppressed (key %s); a call with altered input is refused too",
					t.Name, br.Record.Key)))
		case journal.Held:
			if journal.Settling(&br.Record, h.now()) {
				// Nobody holds it: an earlier attempt's settle window is
				// open, and "in progress elsewhere" would be untrue.
				res, again := f.settling(ctx, &br.Record)
				if again {
					continue
				}
				return res
			}
			v := retryclass.Verdict{Class: retryclass.InFlight}
			delay, ok := f.schedule().Next(ctx, v)
			if !ok {
				return f.answer(ctx, f.suppressed(retryclass.InFlight, len(br.Record.Attempts),
					"the same action is still in progress elsewhere"))
			}
			f.eventDelay(ctx, EventInFlight, retryclass.InFlight, delay)
			if err := retryclass.Wait(ctx, delay); err != nil {
				return f.answer(ctx, f.inProgress(len(br.Record.Attempts),
					"the same action is in progress elsewhere; this caller stopped waiting ("+err.Error()+")"))
			}
		case journal.Started:
			return f.own(ctx, br, func(ctx context.Context) Result { return f.execute(ctx, req.AttemptID) })
		case journal.TakenOver:
			return f.own(ctx, br, func(ctx context.Context) Result { return f.takeover(ctx, br.Record) })
		default:
			return f.answer(ctx, Result{Status: Rejected,
				Err: fmt.Errorf("harness: tool %q key %s: journal answered unknown begin outcome %d", t.Name, p.d.Key, br.Outcome)})
		}
	}
}

// own runs body while the flight owns the intent's lease, renewing it; if
// the lease is lost the context body runs with ends.
func (f *flight) own(ctx context.Context, br journal.BeginResult, body func(context.Context) Result) Result {
	f.token, f.tries = br.Token, len(br.Record.Attempts)
	ctx, cancel := f.keepLease(ctx)
	defer func() {
		if !f.detached { // else the background check renews it until it ends
			f.lease.Stop()
			cancel(nil)
		}
	}()
	return body(ctx)
}

// takeover continues an intent whose earlier attempt ended without a
// recorded answer (a crash, a lost answer) or whose recorded outcome a
// re-issue runs or reconciles again (journal.Reissue).
func (f *flight) takeover(ctx context.Context, rec journal.Record) Result {
	t := f.p.tool
	step := journal.TakeoverStep(&rec, t.Effect)
	notExecuted := journal.LastAttemptNotExecuted(&rec)
	f.mayHaveRun = mayHaveRun(&rec)
	f.event(ctx, EventTakeover, nil)
	prevClass, prevErr := "unknown", "no outcome recorded before the lease expired"
	if notExecuted {
		prevClass, prevErr = "", ""
	}
	if step == journal.StepReconcile {
		cause := errors.New("an earlier attempt ended without a recorded outcome (crash, lost answer or an unknown outcome)")
		if t.Reconcile == nil {
			res, _ := f.reconcile(ctx, cause) // records unknown: nobody to ask
			return res
		}
		// Its settle window has passed (Begin waited for it); the check
		// may still take a confirming settle window.
		return f.check(ctx, f.h.now(), func(ctx context.Context) Result {
			if res, settled := f.reconcile(ctx, cause); settled {
				return res
			}
			return f.rerun(ctx, journal.ClassNotExecuted, "the Reconcile hook said twice, a settle window apart, that it did not happen")
		})
	}
	return f.rerun(ctx, prevClass, prevErr)
}

// rerun starts a new attempt of a taken-over intent, closing the earlier
// one with prevClass, and executes it.
func (f *flight) rerun(ctx context.Context, prevClass, prevErr string) Result {
	id := f.h.newAttemptID()
	if err := f.startAttempt(ctx, id, prevClass, prevErr); err != nil {
		return f.lost(ctx, err, nil)
	}
	return f.execute(ctx, id)
}

// mayHaveRun reports whether any attempt of rec may have taken effect:
// every attempt that was not closed as provably not executed may have.
func mayHaveRun(rec *journal.Record) bool {
	for _, a := range rec.Attempts {
		if a.Class != journal.ClassNotExecuted {
			return true
		}
	}
	return false
}

// execute runs attempts until one settles the intent.
func (f *flight) execute(ctx context.Context, attemptID string) Result {
	for {
		f.eventAttempt(ctx, EventAfterWriteAhead, attemptID)
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

// tryInTx runs one attempt of an InTx effect. It returns settled with the
// result when the attempt ended the call, else the failure and its
// verdict.
func (f *flight) tryInTx(ctx context.Context, attemptID string) (res Result, settled bool, v retryclass.Verdict, err error) {
	res, settled, err = f.attemptInTx(ctx, attemptID)
	if settled {
		return res, true, v, err
	}
	return res, false, f.inTxVerdict(ctx, err), err
}

// tryFunc runs one attempt of a Func effect. It returns settled with the
// result when the attempt ended the call (a success, or a panic), else the
// failure and its verdict.
func (f *flight) tryFunc(ctx context.Context, attemptID string) (res Result, settled bool, v retryclass.Verdict, err error) {
	t := f.p.tool
	out, err, resent := f.h.invoke(ctx, t, f.p, attemptID)
	if err != nil {
		v = t.policy.Verdict(ctx, err)
		if resent && v.Class == retryclass.NotExecuted {
			// "Not executed" may be the answer to net/http's resend;
			// the first send of the request may have acted.
			v.Class = retryclass.MaybeExecuted
		}
	}
	f.eventEffect(ctx, attemptID, v.Class, err)
	if err == nil {
		return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: out}, Succeeded, Executed, out, nil), true, v, nil
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		// A panic is a bug, not a transient failure: never retried. It
		// may have struck after the effect, so only a tool without one
		// records a definite failure.
		if t.Effect == journal.ReadOnly {
			return f.completeErr(ctx, journal.StateFailed, retryclass.Terminal, err), true, v, err
		}
		return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted, err), true, v, err
	}
	return Result{}, false, v, err
}

// afterFailure carries out failureTable's row for a failed attempt:
// settled with the result when the call ends here, else the verdict to
// retry under.
func (f *flight) afterFailure(ctx context.Context, v retryclass.Verdict, err error) (retryclass.Verdict, Result, bool) {
	if v.Class == retryclass.Success {
		// A classifier that calls an error a success is overruled.
		v.Class = retryclass.MaybeExecuted
	}
	if v.Class == retryclass.MaybeExecuted {
		f.mayHaveRun = true
	}
	rule := failureOf(f.p.tool.Effect, v.Class, f.mayHaveRun)
	switch rule.step {
	case recordNow:
		return v, f.completeErr(ctx, rule.state, rule.record, rule.message(err)), true
	case reconcileFirst:
		// Never retried blindly: it could double the effect. Once the
		// downstream can no longer be acting on the attempt, the
		// Reconcile hook is asked, in a background check the caller
		// does not wait for beyond its budget.
		if f.p.tool.Reconcile == nil {
			res, _ := f.reconcile(ctx, err) // records unknown: nobody to ask
			return v, res, true
		}
		return v, f.check(ctx, f.h.now().Add(f.p.tool.settle), func(ctx context.Context) Result {
			if res, ok := f.reconcileEarly(ctx, err); ok {
				return res
			}
			if res, settled := f.settleThenReconcile(ctx, err); settled {
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

// inTxVerdict classifies the failure of an InTx effect, whose transaction
// rolled back with it (inTxClass).
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

// retry waits out the backoff for a retryable failure and records the next
// attempt. ok is false when the budget is spent or the caller left; a lost
// lease is answered by f.lost through giveUp's Complete, which is fenced.
func (f *flight) retry(ctx context.Context, v retryclass.Verdict, err error) (attemptID string, ok bool) {
	delay, ok := f.schedule().Next(ctx, v)
	if !ok {
		return "", false
	}
	f.eventRetry(ctx, v.Class, delay, err)
	if retryclass.Wait(ctx, delay) != nil {
		return "", false
	}
	attemptID = f.h.newAttemptID()
	if serr := f.startAttempt(ctx, attemptID, v.Class.String(), err.Error()); serr != nil {
		return "", false
	}
	return attemptID, true
}

// giveUp records the outcome of a retryable failure whose budget is spent
// (or whose caller left between attempts): failureTable's, for the class
// the last attempt left.
func (f *flight) giveUp(ctx context.Context, c retryclass.Class, err error) Result {
	rule := failureOf(f.p.tool.Effect, c, f.mayHaveRun)
	return f.completeErr(ctx, rule.state, rule.record, rule.message(err))
}

// attemptInTx runs an InTx tool's effect in the transaction that records
// its outcome. settled reports that res answers the call; otherwise err is
// the effect's failure and the transaction rolled back.
func (f *flight) attemptInTx(ctx context.Context, attemptID string) (res Result, settled bool, err error) {
	t, tc := f.p.tool, f.h.store.(TxCompleter)
	var effectErr error
	rec, err := tc.CompleteWith(context.WithoutCancel(ctx), f.p.d.Key, f.token,
		func(txCtx context.Context) (out []byte, err error) {
			// The effect keeps the caller's context (its deadline and the
			// key) and gains the store's transaction from txCtx.
			actx := f.h.attemptContext(withValuesOf(ctx, txCtx), t, f.p, attemptID)
			if pe := guarded(actx, t, func(actx context.Context) { out, effectErr = t.InTx(actx, f.p.call.Input) }); pe != nil {
				effectErr = pe // rolled back with the transaction, like any error of the effect
				return nil, pe
			}
			return out, effectErr
		})
	effectClass := retryclass.Success
	if effectErr != nil {
		effectClass = retryclass.NotExecuted // rolled back with its transaction
	}
	f.eventEffect(ctx, attemptID, effectClass, effectErr)
	switch {
	case err == nil:
		f.eventAttempt(ctx, EventAfterOutcome, "")
		return f.answer(ctx, Result{Status: Succeeded, Source: Executed, Output: rec.Output}), true, nil
	case effectErr != nil && errors.Is(err, effectErr):
		return Result{}, false, err
	case errors.Is(err, journal.ErrOutcomeUncertain):
		// Effect and outcome committed together or not at all: the record
		// tells which.
		if rec, gerr := f.h.store.Get(context.WithoutCancel(ctx), f.p.d.Key); gerr == nil {
			if rec.State == journal.StateSucceeded {
				return f.answer(ctx, Result{Status: Succeeded, Source: Executed, Output: rec.Output}), true, nil
			}
			if rec.State == journal.StatePending && rec.Lease.Token == f.token {
				return Result{}, false, retryclass.MarkNotExecuted(err)
			}
		}
	}
	return f.lost(ctx, err, nil), true, nil
}

// invoke runs one attempt of the tool with the key and attempt id in its
// context, under the tool's timeout, turning a panic into *PanicError.
// runtime.Goexit is not recovered: it ends the flight's goroutine, the
// record stays pending, and its lease expiry hands the intent to the next
// call as after a crash.
func (h *Harness) invoke(ctx context.Context, t *tool, p *prepared, attemptID string) (out json.RawMessage, err error, resent bool) {
	actx := h.attemptContext(ctx, t, p, attemptID)
	if pe := guarded(actx, t, func(actx context.Context) { out, err = t.Func(actx, p.call.Input) }); pe != nil {
		return nil, pe, false
	}
	ai, _ := actx.Value(keyCtxKey).(*attemptInfo)
	return out, err, ai != nil && ai.resent.Load()
}

// guarded runs user code (the tool, its InTx effect, its Reconcile hook)
// under the tool's timeout, and returns the *PanicError of a panic in it,
// nil when fn returned. runtime.Goexit is not recovered: it ends the
// flight's goroutine, as after a crash.
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

// attemptContext is the context a tool's attempt runs with: the key, the
// attempt id and whether the downstream may be asked to deduplicate by key
// (Transport reads it).
func (h *Harness) attemptContext(ctx context.Context, t *tool, p *prepared, attemptID string) context.Context {
	return &attemptCtx{Context: ctx, info: attemptInfo{key: p.d.Key, attempt: attemptID, unkeyed: t.Effect == journal.Unkeyed, call: placeOf(p.call)}}
}

// runUnjournaled runs a ReadOnly tool that is not journaled: retried on any
// retryable failure, nothing recorded.
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
			f.eventRetry(ctx, v.Class, delay, err)
			if retryclass.Wait(ctx, delay) == nil {
				continue
			}
		}
		return f.answer(ctx, Result{Status: Failed, Source: Executed,
			Err: &OutcomeError{Tool: t.Name, Key: p.d.Key, Class: v.Class, Status: Failed, Message: err.Error(), cause: err}})
	}
}
