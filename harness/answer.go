package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

// complete records the outcome, fenced by the lease token, and answers.
func (f *flight) complete(ctx context.Context, c journal.Completion, status Status, src Source, out json.RawMessage, oe *OutcomeError) Result {
	c.Key, c.Token = f.p.d.Key, f.token
	if f.h.opts.Redact != nil && c.State == journal.StateSucceeded {
		c.Output = f.h.opts.Redact(f.p.tool.Name, out)
	}
	// Recorded even if the caller has gone; renewal stops first.
	f.lease.Stop()
	if _, err := f.h.store.Complete(context.WithoutCancel(ctx), c); err != nil {
		return f.lost(ctx, err, out)
	}
	f.event(ctx, Event{Kind: EventAfterOutcome})
	res := Result{Status: status, Source: src, Output: out}
	if oe != nil {
		res.Err = oe
		if f.person {
			f.event(ctx, Event{Kind: EventNeedsPerson, Class: oe.Class, Err: oe, Command: "agentctl resolve " +
				f.p.d.Key.String() + " --succeeded [--output JSON] | --failed --reason TEXT"})
		}
	}
	return f.answer(ctx, res)
}

// completeErr records and answers an outcome other than success.
func (f *flight) completeErr(ctx context.Context, st journal.State, c retryclass.Class, err error) Result {
	status := statusOf(st)
	oe := &OutcomeError{Tool: f.p.tool.Name, Key: f.p.d.Key, Class: c, Message: err.Error(), Status: status, cause: err}
	return f.complete(ctx, journal.Completion{State: st, ErrorClass: c.String(), ErrorMessage: oe.Message}, status, Executed, nil, oe)
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

// lost answers when the journal refused or failed to record: a settled
// record, else unknown (with the tool's output, if any).
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

// fromRecord is ResultFromRecord, counting rec's attempts as f's.
func (f *flight) fromRecord(rec journal.Record) Result {
	f.tries = len(rec.Attempts)
	return ResultFromRecord(&rec)
}

// ResultFromRecord is the Result a call answered from rec reports, CallID
// empty; a recorded class that is not a retry class becomes what the
// state amounts to.
func ResultFromRecord(rec *journal.Record) Result {
	res := Result{Tool: rec.Intent.Tool, Key: rec.Key, Status: statusOf(rec.State), Source: Replayed, Attempts: len(rec.Attempts)}
	switch rec.State {
	case journal.StateSucceeded:
		res.Output = rec.Output
		return res
	case journal.StatePending:
		res.Status = InProgress
	case journal.StateAwaiting:
		a := cmp.Or(rec.Approval, new(journal.Approval)) // a record from elsewhere may lack it
		res.Status, res.Source = AwaitingApproval, NoSource
		res.Err = &OutcomeError{Tool: rec.Intent.Tool, Key: rec.Key, Class: retryclass.NotExecuted, Status: res.Status, Approval: a,
			Message: fmt.Sprintf("it needs %d approval(s), %d given, by %s; an approver runs: agentctl approve %s --fingerprint %s",
				a.Need, len(a.Given), a.Deadline.UTC().Format(time.RFC3339), rec.Key, rec.Fingerprint)}
		return res
	}
	c, err := retryclass.ParseClass(rec.ErrorClass)
	var a *journal.Approval
	if rec.ErrorClass == reissue.ClassRejected || rec.ErrorClass == reissue.ClassExpired {
		c, err, a = retryclass.Terminal, nil, rec.Approval // a person's no, or nobody's yes in time
	}
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
	res.Err = &OutcomeError{Tool: rec.Intent.Tool, Key: rec.Key, Class: c, Message: rec.ErrorMessage, Status: res.Status, Approval: a}
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

// rejectedEarly reports a call refused before its flight, logged always.
func (h *Harness) rejectedEarly(ctx context.Context, p *prepared) Result {
	res := Result{CallID: p.call.ID, Tool: p.call.Tool, Status: Rejected, Err: p.err, Key: p.d.Key}
	e := resultEvent(Event{Tool: p.call.Tool, Session: p.call.Session, Turn: p.call.Turn, Key: res.Key, CallID: p.call.ID}, res)
	h.emit(ctx, e)
	if h.opts.Logger == nil {
		h.log(ctx, slog.Default(), e)
	}
	return res
}

// emitJoined reports the result of a call that shared or left a flight.
func (h *Harness) emitJoined(ctx context.Context, p *prepared, res Result) {
	h.emit(ctx, resultEvent(p.event(), res))
}

// resultEvent is the EventResult that reports res, extending base.
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

// event reports a step of the flight: e's step fields on the call's.
func (f *flight) event(ctx context.Context, e Event) {
	b := f.base
	b.Kind, b.Attempt, b.Class, b.Delay, b.Err, b.Attempts, b.Command = e.Kind, e.Attempt, e.Class, e.Delay, e.Err, f.tries, e.Command
	f.h.emit(ctx, b)
}

// emit reports e to the Observer and the Logger (EventNeedsPerson always).
func (h *Harness) emit(ctx context.Context, e Event) {
	if h.opts.Observer != nil {
		h.opts.Observer.Observe(ctx, e)
	}
	if l := h.opts.Logger; l != nil || e.Kind == EventNeedsPerson {
		h.log(ctx, cmp.Or(l, slog.Default()), e)
	}
}

// log writes the events worth a line.
func (h *Harness) log(ctx context.Context, l *slog.Logger, e Event) {
	var level slog.Level
	var msg string
	switch e.Kind {
	case EventResult:
		msg = "agentonce " + e.Status.String()
		if e.Source != NoSource {
			msg += " (" + e.Source.String() + ")"
		}
		switch e.Status {
		case Suppressed, Unknown, Rejected, AwaitingApproval:
			level = slog.LevelWarn
		case Failed, InProgress:
			level = slog.LevelInfo
		}
	case EventRetry:
		msg = "agentonce retried"
	case EventInFlight:
		msg = "agentonce in flight elsewhere"
	case EventTakeover:
		msg, level = "agentonce took over an expired lease", slog.LevelWarn
	case EventReconcile:
		msg = "agentonce reconcile"
	case EventSettle:
		msg = "agentonce waiting out the settle window"
	case EventNeedsPerson:
		msg, level = "agentonce needs a person: resolve the intent after checking the downstream", slog.LevelWarn
		if strings.HasPrefix(e.Command, "agentctl approve") {
			msg = "agentonce needs a person: approve or reject the intent"
		}
	default:
		return
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("tool", e.Tool),
		slog.String("session", e.Session),
		slog.String("turn", e.Turn),
		slog.String("key", e.Key.String()),
		slog.Int("attempts", e.Attempts),
	}
	if e.Attempt != "" {
		attrs = append(attrs, slog.String("attempt", e.Attempt))
	}
	if e.Class != retryclass.Success {
		attrs = append(attrs, slog.String("class", e.Class.String()))
	}
	if e.Delay > 0 {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if e.Command != "" {
		attrs = append(attrs, slog.String("command", e.Command))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}
