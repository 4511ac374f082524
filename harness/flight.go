package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/lease"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

// flight is the state of one execution of an intent.
type flight struct {
	h     *Harness
	p     *prepared
	token uint64
	tries int
	// mayHaveRun says an attempt of the intent may have taken effect: from
	// then on a refusal of a retry is not "nothing was done".
	mayHaveRun bool
	sched      *retryclass.Schedule // made on first need
	base       Event
	lease      *lease.Keeper // set while this flight owns the intent
	// detached says the flight went on as a background check (settle.go),
	// which alone uses it from then on.
	detached  bool
	waitUntil time.Time // ends the caller's wait for a check; set on first need
	// person says the outcome being recorded needs a person to settle it
	// (complete reports EventNeedsPerson).
	person bool
}

// newFlight is the flight of the prepared call p.
func (h *Harness) newFlight(p *prepared) *flight {
	return &flight{h: h, p: p, base: p.event()}
}

func (f *flight) schedule() *retryclass.Schedule {
	if f.sched == nil {
		f.sched = f.p.tool.policy.NewSchedule()
	}
	return f.sched
}

// run drives a journaled call as Begin decides.
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
		Approvals:   t.Approvals,
		ApprovalTTL: t.ApprovalTTL,
	}
	if !h.opts.FingerprintOnly {
		req.Input = p.d.Canonical
	}
	f.event(ctx, Event{Kind: EventBeforeWriteAhead})
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
			return f.answer(ctx, f.refused(Suppressed, retryclass.Mismatch, len(br.Record.Attempts),
				"this key was already used with a different input (fingerprint mismatch)"))
		case journal.Guarded:
			return f.answer(ctx, f.refused(Suppressed, retryclass.Mismatch, 0,
				fmt.Sprintf("an earlier call of %s in this turn was suppressed (key %s); a call with altered input is refused too",
					t.Name, br.Record.Key)))
		case journal.Held:
			if br.Record.State == journal.StateAwaiting { // no wait would end it
				res, key := f.fromRecord(br.Record), p.d.Key.String()
				f.event(ctx, Event{Kind: EventNeedsPerson, Class: retryclass.NotExecuted, Err: res.Err, Command: "agentctl approve " +
					key + " --fingerprint " + br.Record.Fingerprint.String() + " | agentctl reject " + key + " --reason TEXT"})
				return f.answer(ctx, res)
			}
			if reissue.Settling(&br.Record, h.now()) { // nobody holds it
				res, again := f.settling(ctx, &br.Record)
				if again {
					continue
				}
				return f.answer(ctx, res)
			}
			v := retryclass.Verdict{Class: retryclass.InFlight}
			delay, ok := f.schedule().Next(ctx, v)
			if !ok {
				return f.answer(ctx, f.refused(Suppressed, retryclass.InFlight, len(br.Record.Attempts),
					"the same action is still in progress elsewhere"))
			}
			f.event(ctx, Event{Kind: EventInFlight, Class: retryclass.InFlight, Delay: delay})
			if err := retryclass.Wait(ctx, delay); err != nil {
				return f.answer(ctx, f.refused(InProgress, retryclass.InFlight, len(br.Record.Attempts),
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

// own runs body while the flight owns, and renews, the intent's lease.
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

// keepLease starts renewing f's lease; the returned context ends with
// ErrLeaseLost when it is lost. The caller stops f.lease, then cancels.
func (f *flight) keepLease(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.lease = lease.Keep(ctx, f.h.store, f.p.d.Key, f.token, f.p.tool.leaseTTL, lostLease(cancel))
	return ctx, cancel
}

// lostLease cancels the owner's context with ErrLeaseLost and the reason.
func lostLease(cancel context.CancelCauseFunc) func(error) {
	return func(err error) { cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err)) }
}

// takeover continues an intent taken over (TakenOver).
func (f *flight) takeover(ctx context.Context, rec journal.Record) Result {
	t := f.p.tool
	if len(rec.Attempts) == 0 && rec.Approval != nil {
		return f.rerun(ctx, "", "") // approved, and nothing ran yet
	}
	step := reissue.Takeover(&rec, t.Effect)
	notExecuted := reissue.LastAttemptNotExecuted(&rec)
	f.mayHaveRun = mayHaveRun(&rec)
	f.event(ctx, Event{Kind: EventTakeover})
	prevClass, prevErr := "unknown", "no outcome recorded before the lease expired"
	if notExecuted {
		prevClass, prevErr = "", ""
	}
	if step == reissue.Reconcile {
		cause := errors.New("an earlier attempt ended without a recorded outcome (crash, lost answer or an unknown outcome)")
		if t.Reconcile == nil {
			res, _ := f.reconcile(ctx, cause) // records unknown: nobody to ask
			return res
		}
		// Its settle window has passed (Begin waited for it).
		return f.check(ctx, f.h.now(), func(ctx context.Context) Result {
			if res, settled := f.reconcile(ctx, cause); settled {
				return res
			}
			return f.rerun(ctx, journal.ClassNotExecuted, "the Reconcile hook said twice, a settle window apart, that it did not happen")
		})
	}
	return f.rerun(ctx, prevClass, prevErr)
}

// rerun starts a new attempt of a taken-over intent and executes it.
func (f *flight) rerun(ctx context.Context, prevClass, prevErr string) Result {
	id := f.h.newAttemptID()
	if err := f.startAttempt(ctx, id, prevClass, prevErr); err != nil {
		return f.lost(ctx, err, nil)
	}
	return f.execute(ctx, id)
}

// mayHaveRun reports whether any attempt of rec may have executed.
func mayHaveRun(rec *journal.Record) bool {
	return slices.ContainsFunc(rec.Attempts, func(a journal.Attempt) bool { return a.Class != journal.ClassNotExecuted })
}

// refused answers an outcome decided without running the tool.
func (f *flight) refused(st Status, c retryclass.Class, tries int, msg string) Result {
	f.tries = tries
	return Result{Status: st, Err: &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Status: st, Message: msg}}
}
