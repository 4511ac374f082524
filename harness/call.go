package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// Call runs one tool call through the journal and answers what happened.
//
// A non-nil error means the call was not answered: it was Rejected
// (unknown tool, invalid or oversize input, closed harness, a journal
// failure; nothing was recorded and the tool did not run), or ctx ended
// while the call waited (the intent goes on and a re-issue is answered from
// the journal). Tool failures are not errors of Call: they are in the
// Result, with Status Failed, Suppressed or Unknown.
func (h *Harness) Call(ctx context.Context, c Call) (Result, error) {
	if err := h.enter(); err != nil {
		return Result{CallID: c.ID, Tool: c.Tool, Status: Rejected, Err: err}, err
	}
	defer h.exit()
	p := h.prepare(c)
	if p.err != nil {
		return p.rejected(), p.err
	}
	res := h.do(ctx, p)
	if res.Status == Rejected {
		return res, res.Err
	}
	return res, nil
}

// prepared is a call whose tool is found and whose key is derived.
type prepared struct {
	call Call
	tool *tool
	d    keyderive.Derived
	err  error
}

func (p *prepared) rejected() Result {
	return Result{CallID: p.call.ID, Tool: p.call.Tool, Status: Rejected, Err: p.err, Key: p.d.Key}
}

func (h *Harness) prepare(c Call) prepared {
	p := prepared{call: c}
	p.tool, p.err = h.lookup(c.Tool)
	if p.err != nil {
		return p
	}
	p.d, p.err = h.derive(p.tool, c)
	if p.err != nil {
		p.err = fmt.Errorf("harness: tool %q: %w: %w", c.Tool, ErrInvalidInput, p.err)
	}
	return p
}

func intentOf(c Call) keyderive.Intent {
	return keyderive.Intent{Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool, Discriminator: c.Discriminator}
}

// do runs a prepared call in its flight: identical calls running at the same
// time in this process share one execution.
func (h *Harness) do(ctx context.Context, p prepared) Result {
	if h.localReads && p.tool.journal {
		if res, ok := h.replay(ctx, &p); ok {
			return res
		}
	}
	res, err, joined := h.flights.Do(ctx, p.d.Key, func(fctx context.Context) (Result, error) {
		if !p.tool.journal {
			return h.runUnjournaled(fctx, p), nil
		}
		return h.run(fctx, p), nil
	})
	if err != nil {
		// The caller left before the flight ended, or the flight died
		// (runtime.Goexit in the tool, or a harness bug).
		return Result{CallID: p.call.ID, Tool: p.call.Tool, Status: Rejected, Key: p.d.Key,
			Err: fmt.Errorf("harness: tool %q key %s: call not answered: %w", p.call.Tool, p.d.Key, err)}
	}
	res.CallID = p.call.ID
	if joined {
		if res.Status == Executed {
			res.Status = Collapsed
		}
		h.emitJoined(ctx, &p, res)
	}
	return res
}

// emitJoined reports the result of a call that shared another's flight;
// the flight reported its own.
func (h *Harness) emitJoined(ctx context.Context, p *prepared, res Result) {
	e := Event{Kind: EventResult, Tool: p.call.Tool, Session: p.call.Session, Turn: p.call.Turn,
		Key: p.d.Key, Tries: res.Attempts, Status: res.Status, Err: res.Err}
	if oe, ok := res.Err.(*OutcomeError); ok {
		e.Class = oe.Class
	}
	h.emit(ctx, e)
}

// replay answers a call from a live settled record by one read, without
// joining a flight: the path of a model re-issuing a finished call. It
// declines (ok false) whenever Begin could decide anything else, and Begin
// then decides.
func (h *Harness) replay(ctx context.Context, p *prepared) (res Result, ok bool) {
	rec, err := h.store.Get(ctx, p.d.Key)
	if err != nil || !rec.State.Settled() || rec.Fingerprint != p.d.Fingerprint ||
		p.tool.retake(&rec) || !h.now().Before(rec.Expires) {
		return Result{}, false
	}
	f := flight{h: h, p: p}
	f.base = Event{Tool: p.tool.Name, Session: p.call.Session, Turn: p.call.Turn, Key: p.d.Key}
	res = f.answer(ctx, f.fromRecord(rec, true))
	res.CallID = p.call.ID
	return res, true
}

// flight is the state of one execution of an intent.
type flight struct {
	h     *Harness
	p     *prepared
	token uint64
	tries int
	sched *retryclass.Schedule // made on first need: the replay path has none
	base  Event
}

func (f *flight) schedule() *retryclass.Schedule {
	if f.sched == nil {
		f.sched = f.p.tool.policy.NewSchedule()
	}
	return f.sched
}

func (h *Harness) run(ctx context.Context, p prepared) Result {
	t := p.tool
	f := &flight{h: h, p: &p}
	f.base = Event{Tool: t.Name, Session: p.call.Session, Turn: p.call.Turn, Key: p.d.Key}
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
			return f.answer(ctx, f.fromRecord(br.Record, true))
		case journal.Mismatch:
			return f.answer(ctx, f.suppressed(retryclass.Mismatch, len(br.Record.Attempts),
				"this key was already used with a different input (fingerprint mismatch)"))
		case journal.Guarded:
			return f.answer(ctx, f.suppressed(retryclass.Mismatch, 0,
				fmt.Sprintf("an earlier call of %s in this turn was suppressed (key %s); a call with altered input is refused too",
					t.Name, br.Record.Key)))
		case journal.Held:
			v := retryclass.Verdict{Class: retryclass.InFlight}
			delay, ok := f.schedule().Next(ctx, v)
			if !ok {
				return f.answer(ctx, f.suppressed(retryclass.InFlight, len(br.Record.Attempts),
					"the same action is still in progress elsewhere"))
			}
			f.eventDelay(ctx, EventInFlight, retryclass.InFlight, delay)
			if err := retryclass.Wait(ctx, delay); err != nil {
				return f.answer(ctx, Result{Status: Rejected,
					Err: fmt.Errorf("harness: tool %q key %s: gave up waiting for the call in flight elsewhere: %w", t.Name, p.d.Key, err)})
			}
		case journal.Started:
			f.token, f.tries = br.Token, len(br.Record.Attempts)
			return f.execute(ctx, req.AttemptID)
		case journal.TakenOver:
			f.token, f.tries = br.Token, len(br.Record.Attempts)
			return f.takeover(ctx, br.Record)
		default:
			return f.answer(ctx, Result{Status: Rejected,
				Err: fmt.Errorf("harness: tool %q key %s: journal answered unknown begin outcome %d", t.Name, p.d.Key, br.Outcome)})
		}
	}
}

// takeover continues an intent whose earlier attempt ended without a
// recorded answer (a crash, a lost answer, or an outcome that may be run
// again: see tool.retake).
func (f *flight) takeover(ctx context.Context, rec journal.Record) Result {
	t := f.p.tool
	notExecuted := false
	if n := len(rec.Attempts); n > 0 {
		notExecuted = rec.Attempts[n-1].Class == retryclass.NotExecuted.String()
	}
	f.event(ctx, EventTakeover, nil)
	if t.Effect == Unkeyed && !notExecuted {
		happened, res := f.reconcile(ctx, errors.New("an earlier attempt ended without a recorded outcome (crash or lost answer)"))
		if happened {
			return res
		}
	}
	id := f.h.newAttemptID()
	prevClass, prevErr := "unknown", "no outcome recorded before the lease expired"
	if notExecuted {
		prevClass, prevErr = "", ""
	}
	if err := f.startAttempt(ctx, id, prevClass, prevErr); err != nil {
		return f.lost(ctx, err)
	}
	return f.execute(ctx, id)
}

// execute runs attempts until one settles the intent.
func (f *flight) execute(ctx context.Context, attemptID string) Result {
	t := f.p.tool
	for {
		f.eventAttempt(ctx, EventAfterWriteAhead, attemptID)
		if t.InTx != nil {
			res, settled, err := f.attemptInTx(ctx, attemptID)
			if settled {
				return res
			}
			// The transaction rolled back with the effect: nothing happened,
			// whatever the error says. A panic is a bug: not retried.
			v := t.policy.Verdict(ctx, err)
			var pe *PanicError
			switch {
			case errors.As(err, &pe) || v.Class == retryclass.Terminal:
				return f.completeErr(ctx, journal.StateFailed, retryclass.Terminal, err)
			case v.Class == retryclass.Mismatch:
				return f.completeErr(ctx, journal.StateSuppressed, v.Class, err)
			case v.Class != retryclass.InFlight:
				v.Class = retryclass.NotExecuted
			}
			next, ok := f.retry(ctx, v, err)
			if !ok {
				return f.giveUp(ctx, v.Class, err)
			}
			attemptID = next
			continue
		}
		out, err := f.h.invoke(ctx, t, f.p, attemptID)
		var v retryclass.Verdict
		if err != nil {
			v = t.policy.Verdict(ctx, err)
		}
		f.eventEffect(ctx, attemptID, v.Class, err)
		if err == nil {
			return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: out}, Executed, out, nil)
		}

		var pe *PanicError
		if errors.As(err, &pe) {
			// A panic is a bug, not a transient failure: never retried. It
			// may have struck after the effect, so only tools that may run
			// again record a definite failure.
			if t.Effect == ReadOnly || t.Effect == Idempotent {
				return f.completeErr(ctx, journal.StateFailed, retryclass.Terminal, err)
			}
			return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted, err)
		}

		switch v.Class {
		case retryclass.Success:
			// A classifier that calls an error a success is overruled: an
			// error with no output cannot be recorded as a result.
			v.Class = retryclass.MaybeExecuted
		case retryclass.Canceled:
			// The caller gave up mid-attempt: the attempt may have run.
			return f.completeErr(ctx, journal.StateUnknown, retryclass.Canceled, err)
		case retryclass.Terminal:
			return f.completeErr(ctx, journal.StateFailed, retryclass.Terminal, err)
		case retryclass.Mismatch:
			return f.completeErr(ctx, journal.StateSuppressed, retryclass.Mismatch, err)
		}
		if v.Class == retryclass.MaybeExecuted && t.Effect == Unkeyed {
			// Never retried blindly: it could double the effect.
			happened, res := f.reconcile(ctx, err)
			if happened {
				return res
			}
			v.Class = retryclass.NotExecuted
		}
		next, ok := f.retry(ctx, v, err)
		if !ok {
			return f.giveUp(ctx, v.Class, err)
		}
		attemptID = next
	}
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

// attemptInTx runs an InTx tool's effect in the transaction that records
// its outcome. settled reports that res answers the call; otherwise err is
// the effect's failure and the transaction rolled back.
func (f *flight) attemptInTx(ctx context.Context, attemptID string) (res Result, settled bool, err error) {
	t, pg := f.p.tool, f.h.store.(*postgres.Store)
	var effectErr error
	rec, err := pg.CompleteInTx(context.WithoutCancel(ctx), f.p.d.Key, f.token,
		func(txCtx context.Context, tx pgx.Tx) (out []byte, err error) {
			actx := WithKey(ctx, f.p.d.Key, attemptID)
			if t.Timeout > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(actx, t.Timeout)
				defer cancel()
			}
			defer func() {
				if r := recover(); r != nil {
					out, err = nil, &PanicError{Tool: t.Name, Value: r, Stack: debug.Stack()}
				}
			}()
			out, effectErr = t.InTx(actx, tx, f.p.call.Input)
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
		return f.answer(ctx, Result{Status: Executed, Output: rec.Output}), true, nil
	case effectErr != nil && errors.Is(err, effectErr):
		return Result{}, false, err
	case errors.Is(err, postgres.ErrOutcomeUncertain):
		// Effect and outcome committed together or not at all: the record
		// tells which.
		if rec, gerr := pg.Get(context.WithoutCancel(ctx), f.p.d.Key); gerr == nil {
			if rec.State == journal.StateSucceeded {
				return f.answer(ctx, Result{Status: Executed, Output: rec.Output}), true, nil
			}
			if rec.State == journal.StatePending && rec.Lease.Token == f.token {
				return Result{}, false, retryclass.MarkNotExecuted(err)
			}
		}
	}
	return f.lost(ctx, err), true, nil
}

// giveUp records the outcome of a retryable failure whose budget is spent.
func (f *flight) giveUp(ctx context.Context, c retryclass.Class, err error) Result {
	switch c {
	case retryclass.NotExecuted:
		return f.completeErr(ctx, journal.StateFailed, c, err)
	case retryclass.InFlight:
		return f.completeErr(ctx, journal.StateSuppressed, c, err)
	default:
		return f.completeErr(ctx, journal.StateUnknown, c, err)
	}
}

// reconcile asks an Unkeyed tool's Reconcile hook whether the effect
// happened. happened reports that res settles the intent (the effect
// happened, or nobody can tell); false means it provably did not happen and
// the tool may run.
func (f *flight) reconcile(ctx context.Context, cause error) (happened bool, res Result) {
	t := f.p.tool
	if t.Reconcile == nil {
		return true, f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
			fmt.Errorf("%w; the tool has no Reconcile hook, so it was not run again", cause))
	}
	f.event(ctx, EventReconcile, cause)
	out, did, err := t.Reconcile(WithKey(ctx, f.p.d.Key, ""), f.p.d.Key, f.p.call.Input)
	switch {
	case err != nil:
		return true, f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
			fmt.Errorf("%w; reconcile failed: %w", cause, err))
	case did:
		return true, f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: out}, Executed, out, nil)
	}
	return false, Result{}
}

func (f *flight) startAttempt(ctx context.Context, id, prevClass, prevErr string) error {
	err := f.h.store.StartAttempt(context.WithoutCancel(ctx), journal.AttemptRequest{
		Key: f.p.d.Key, Token: f.token, ID: id, PrevClass: prevClass, PrevError: prevErr,
		LeaseTTL: f.p.tool.leaseTTL, Durable: f.p.tool.durable,
	})
	if err == nil {
		f.tries++
	}
	return err
}

func (f *flight) completeErr(ctx context.Context, st journal.State, c retryclass.Class, err error) Result {
	status := Unknown
	switch st {
	case journal.StateFailed:
		status = Failed
	case journal.StateSuppressed:
		status = Suppressed
	}
	oe := &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Message: err.Error(), Status: status, cause: err}
	return f.complete(ctx, journal.Completion{State: st, ErrorClass: c.String(), ErrorMessage: oe.Message}, status, nil, oe)
}

// complete records the outcome, fenced by the lease token, and answers.
func (f *flight) complete(ctx context.Context, c journal.Completion, status Status, out json.RawMessage, oe *OutcomeError) Result {
	c.Key, c.Token = f.p.d.Key, f.token
	if f.h.opts.Redact != nil && c.State == journal.StateSucceeded {
		c.Output = f.h.opts.Redact(f.p.tool.Name, out)
	}
	// The outcome is recorded even if the caller has gone: it happened.
	if _, err := f.h.store.Complete(context.WithoutCancel(ctx), c); err != nil {
		res := f.lost(ctx, err)
		if res.Status == Unknown {
			// The tool answered; only the journal does not know it.
			res.Output = out
		}
		return res
	}
	f.eventAttempt(ctx, EventAfterOutcome, "")
	res := Result{Status: status, Output: out}
	if oe != nil {
		res.Err = oe
	}
	return f.answer(ctx, res)
}

// lost answers when the journal refused or failed to record: another owner
// took over (ErrFenced), an operator resolved the intent, or the journal
// failed. A settled record is answered; anything else is unknown.
func (f *flight) lost(ctx context.Context, cause error) Result {
	if errors.Is(cause, journal.ErrFenced) {
		if rec, err := f.h.store.Get(context.WithoutCancel(ctx), f.p.d.Key); err == nil && rec.State.Settled() {
			return f.answer(ctx, f.fromRecord(rec, true))
		}
	}
	oe := &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: retryclass.MaybeExecuted, Status: Unknown,
		Message: "the outcome could not be recorded: " + cause.Error(), cause: cause}
	return f.answer(ctx, Result{Status: Unknown, Err: oe})
}

func (f *flight) suppressed(c retryclass.Class, tries int, msg string) Result {
	f.tries = tries
	return Result{Status: Suppressed, Err: &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Status: Suppressed, Message: msg}}
}

// fromRecord turns a settled record into a Result.
func (f *flight) fromRecord(rec journal.Record, replayed bool) Result {
	f.tries = len(rec.Attempts)
	res := Result{FromJournal: replayed}
	switch rec.State {
	case journal.StateSucceeded:
		res.Status, res.Output = Replayed, rec.Output
		return res
	case journal.StateFailed:
		res.Status = Failed
	case journal.StateSuppressed:
		res.Status = Suppressed
	default:
		res.Status = Unknown
	}
	c, err := retryclass.ParseClass(rec.ErrorClass)
	if err != nil {
		// Not a retry class: an operator's resolution ("resolved") or a
		// record from elsewhere. The state says what it amounts to.
		switch res.Status {
		case Failed:
			c = retryclass.Terminal
		case Suppressed:
			c = retryclass.Mismatch
		default:
			c = retryclass.MaybeExecuted
		}
	}
	res.Err = &OutcomeError{Tool: f.p.tool.Name, Key: rec.Key, Class: c, Message: rec.ErrorMessage, Status: res.Status}
	return res
}

// answer fills the call's fields into res and reports it.
func (f *flight) answer(ctx context.Context, res Result) Result {
	res.Tool, res.Key, res.Attempts = f.p.tool.Name, f.p.d.Key, f.tries
	e := f.base
	e.Kind, e.Status, e.Err, e.Tries = EventResult, res.Status, res.Err, f.tries
	if oe, ok := res.Err.(*OutcomeError); ok {
		e.Class = oe.Class
	}
	f.h.emit(ctx, e)
	return res
}

func (f *flight) event(ctx context.Context, k EventKind, err error) {
	e := f.base
	e.Kind, e.Err, e.Tries = k, err, f.tries
	f.h.emit(ctx, e)
}

func (f *flight) eventAttempt(ctx context.Context, k EventKind, attempt string) {
	e := f.base
	e.Kind, e.Attempt, e.Tries = k, attempt, f.tries
	f.h.emit(ctx, e)
}

// eventEffect reports that an attempt returned: Err and Class say how it
// failed, and are empty when the tool succeeded.
func (f *flight) eventEffect(ctx context.Context, attempt string, c retryclass.Class, err error) {
	e := f.base
	e.Kind, e.Attempt, e.Tries, e.Class, e.Err = EventAfterEffect, attempt, f.tries, c, err
	f.h.emit(ctx, e)
}

func (f *flight) eventDelay(ctx context.Context, k EventKind, c retryclass.Class, d time.Duration) {
	e := f.base
	e.Kind, e.Class, e.Delay, e.Tries = k, c, d, f.tries
	f.h.emit(ctx, e)
}

func (f *flight) eventRetry(ctx context.Context, c retryclass.Class, d time.Duration, err error) {
	e := f.base
	e.Kind, e.Class, e.Delay, e.Tries, e.Err = EventRetry, c, d, f.tries, err
	f.h.emit(ctx, e)
}

// invoke runs one attempt of the tool with the key and attempt id in its
// context, under the tool's timeout, turning a panic into *PanicError.
// runtime.Goexit is not recovered: it ends the flight's goroutine, the
// record stays pending, and its lease expiry hands the intent to the next
// call as after a crash.
func (h *Harness) invoke(ctx context.Context, t *tool, p *prepared, attemptID string) (out json.RawMessage, err error) {
	actx := WithKey(ctx, p.d.Key, attemptID)
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, t.Timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &PanicError{Tool: t.Name, Value: r, Stack: debug.Stack()}
		}
	}()
	return t.Func(actx, p.call.Input)
}

// runUnjournaled runs a ReadOnly tool that is not journaled: retried on any
// retryable failure, nothing recorded.
func (h *Harness) runUnjournaled(ctx context.Context, p prepared) Result {
	t := p.tool
	f := &flight{h: h, p: &p}
	f.base = Event{Tool: t.Name, Session: p.call.Session, Turn: p.call.Turn, Key: p.d.Key}
	for {
		id := h.newAttemptID()
		f.tries++
		out, err := h.invoke(ctx, t, &p, id)
		if err == nil {
			return f.answer(ctx, Result{Status: Executed, Output: out})
		}
		v := t.policy.Verdict(ctx, err)
		delay, ok := f.schedule().Next(ctx, v)
		if ok && v.Class.Retryable() {
			f.eventRetry(ctx, v.Class, delay, err)
			if retryclass.Wait(ctx, delay) == nil {
				continue
			}
		}
		return f.answer(ctx, Result{Status: Failed,
			Err: &OutcomeError{Tool: t.Name, Key: p.d.Key, Class: v.Class, Status: Failed, Message: err.Error(), cause: err}})
	}
}

func (h *Harness) newAttemptID() string {
	return h.owner + "#" + strconv.FormatUint(h.attemptN.Add(1), 36)
}
