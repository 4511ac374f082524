package harness

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// This file turns what a flight reached into a recorded outcome and an
// answer, and reports each step as an Event.

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

func statusOf(st journal.State) Status {
	switch st {
	case journal.StateSucceeded:
		return Succeeded
	case journal.StateFailed:
		return Failed
	case journal.StateSuppressed:
		return Suppressed
	}
	return Unknown
}

// completeErr records an outcome other than success that this flight
// reached, and answers it.
func (f *flight) completeErr(ctx context.Context, st journal.State, c retryclass.Class, err error) Result {
	status := statusOf(st)
	oe := &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Message: err.Error(), Status: status, cause: err}
	return f.complete(ctx, journal.Completion{State: st, ErrorClass: c.String(), ErrorMessage: oe.Message}, status, Executed, nil, oe)
}

// complete records the outcome, fenced by the lease token, and answers.
func (f *flight) complete(ctx context.Context, c journal.Completion, status Status, src Source, out json.RawMessage, oe *OutcomeError) Result {
	c.Key, c.Token = f.p.d.Key, f.token
	if f.h.opts.Redact != nil && c.State == journal.StateSucceeded {
		c.Output = f.h.opts.Redact(f.p.tool.Name, out)
	}
	// The outcome is recorded even if the caller has gone: it happened.
	// Renewal stops first, so that it cannot race the lease's end.
	f.lease.Stop()
	if _, err := f.h.store.Complete(context.WithoutCancel(ctx), c); err != nil {
		return f.lost(ctx, err, out)
	}
	f.eventAttempt(ctx, EventAfterOutcome, "")
	res := Result{Status: status, Source: src, Output: out}
	if oe != nil {
		res.Err = oe
	}
	return f.answer(ctx, res)
}

// lost answers when the journal refused or failed to record: another owner
// took over (ErrFenced), an operator resolved the intent, or the journal
// failed. A settled record is answered; anything else is unknown, with the
// output the tool gave, if any (the tool answered; only the journal does
// not know it).
func (f *flight) lost(ctx context.Context, cause error, out json.RawMessage) Result {
	if errors.Is(cause, journal.ErrFenced) {
		if rec, err := f.h.store.Get(context.WithoutCancel(ctx), f.p.d.Key); err == nil && rec.State.Settled() {
			return f.answer(ctx, f.fromRecord(rec))
		}
	}
	oe := &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: retryclass.MaybeExecuted, Status: Unknown,
		Message: "the outcome could not be recorded: " + cause.Error(), cause: cause}
	return f.answer(ctx, Result{Status: Unknown, Source: Executed, Output: out, Err: oe})
}

// suppressed answers a suppression decided without running the tool (a
// mismatch, the guard, another owner past the in-flight budget).
func (f *flight) suppressed(c retryclass.Class, tries int, msg string) Result {
	f.tries = tries
	return Result{Status: Suppressed, Err: &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Status: Suppressed, Message: msg}}
}

// inProgress answers a caller that stopped waiting for an intent someone
// else is running.
func (f *flight) inProgress(tries int, msg string) Result {
	f.tries = tries
	return Result{Status: InProgress, Err: &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: retryclass.InFlight, Status: InProgress, Message: msg}}
}

// fromRecord turns a settled record into a Result, replayed from the
// journal, and counts its attempts as this flight's.
func (f *flight) fromRecord(rec journal.Record) Result {
	f.tries = len(rec.Attempts)
	return ResultFromRecord(&rec)
}

// ResultFromRecord is the Result a call answered from rec reports, in the
// harness's words: what a re-issue of a settled record replays
// (Source Replayed), and InProgress for a pending one. CallID is left
// empty. A recorded class that is not a retry class (an operator's
// resolution, a record from elsewhere) becomes what the state amounts to:
// Terminal for a failure, Mismatch for a suppression, MaybeExecuted for
// an unknown outcome. The timeline of agentctl shows the same Result.
func ResultFromRecord(rec *journal.Record) Result {
	res := Result{Tool: rec.Intent.Tool, Key: rec.Key, Status: statusOf(rec.State), Source: Replayed, Attempts: len(rec.Attempts)}
	switch rec.State {
	case journal.StateSucceeded:
		res.Output = rec.Output
		return res
	case journal.StatePending:
		res.Status = InProgress
	}
	c, err := retryclass.ParseClass(rec.ErrorClass)
	if err != nil {
		switch res.Status {
		case Failed:
			c = retryclass.Terminal
		case Suppressed:
			c = retryclass.Mismatch
		default:
			c = retryclass.MaybeExecuted
		}
	}
	res.Err = &OutcomeError{Tool: rec.Intent.Tool, Key: rec.Key, Class: c, Message: rec.ErrorMessage, Status: res.Status}
	return res
}

// answer fills the call's fields into res and reports it.
func (f *flight) answer(ctx context.Context, res Result) Result {
	res.Tool, res.Key, res.Attempts = f.p.tool.Name, f.p.d.Key, f.tries
	if !f.detached { // a background check's outcome answers no call itself
		f.h.emit(ctx, resultEvent(f.base, res))
	}
	return res
}

// resultEvent is the EventResult that reports res, extending base (the
// call's tool, session, turn and key): the one way a result is reported,
// whether a flight, a joined caller or an early refusal answers.
func resultEvent(base Event, res Result) Event {
	e := base
	e.Kind, e.Status, e.Source, e.Err, e.Attempts = EventResult, res.Status, res.Source, res.Err, res.Attempts
	if res.CallID != "" {
		e.CallID = res.CallID
	}
	if oe, ok := res.Err.(*OutcomeError); ok {
		e.Class = oe.Class
	}
	return e
}

func (f *flight) event(ctx context.Context, k EventKind, err error) {
	e := f.base
	e.Kind, e.Err, e.Attempts = k, err, f.tries
	f.h.emit(ctx, e)
}

func (f *flight) eventAttempt(ctx context.Context, k EventKind, attempt string) {
	e := f.base
	e.Kind, e.Attempt, e.Attempts = k, attempt, f.tries
	f.h.emit(ctx, e)
}

// eventEffect reports that an attempt returned: Err and Class say how it
// failed, and are empty when the tool succeeded.
func (f *flight) eventEffect(ctx context.Context, attempt string, c retryclass.Class, err error) {
	e := f.base
	e.Kind, e.Attempt, e.Attempts, e.Class, e.Err = EventAfterEffect, attempt, f.tries, c, err
	f.h.emit(ctx, e)
}

func (f *flight) eventDelay(ctx context.Context, k EventKind, c retryclass.Class, d time.Duration) {
	e := f.base
	e.Kind, e.Class, e.Delay, e.Attempts = k, c, d, f.tries
	f.h.emit(ctx, e)
}

func (f *flight) eventRetry(ctx context.Context, c retryclass.Class, d time.Duration, err error) {
	e := f.base
	e.Kind, e.Class, e.Delay, e.Attempts, e.Err = EventRetry, c, d, f.tries, err
	f.h.emit(ctx, e)
}
