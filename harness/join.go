package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

// The answers of a call that runs no flight of its own: one joined to
// another caller's flight, one answered from the journal, and one whose
// caller left before its flight ended.

// collapsed is res, a flight's result, for a call that joined it.
func (h *Harness) collapsed(ctx context.Context, p *prepared, res Result) Result {
	if res.Source == Executed {
		res.Source = Collapsed
	}
	h.emitJoined(ctx, p, res)
	return res
}

// fromJournal answers p's call from rec.
func (h *Harness) fromJournal(ctx context.Context, p *prepared, rec journal.Record) Result {
	f := h.newFlight(p)
	res := f.answer(ctx, f.fromRecord(rec))
	res.CallID = p.call.ID
	return res
}

// left answers a caller that stopped waiting for its flight from what the
// journal holds.
func (h *Harness) left(ctx context.Context, p *prepared, cause error) Result {
	base := Result{CallID: p.call.ID, Tool: p.call.Tool, Key: p.d.Key}
	oe := &OutcomeError{Tool: p.call.Tool, Key: p.d.Key, Class: retryclass.Canceled, cause: cause}
	if !p.tool.journal {
		oe.Status, oe.Message = Failed, "the caller left before the read-only tool answered: "+cause.Error()
		base.Status, base.Err = Failed, oe
		h.emitJoined(ctx, p, base)
		return base
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rec, err := h.store.Get(gctx, p.d.Key)
	switch {
	case err == nil && rec.Fingerprint != p.d.Fingerprint && !rec.Fingerprint.IsZero():
		base.Status = Rejected
		base.Err = fmt.Errorf("harness: tool %q key %s: the caller left before the tool started: %w", p.call.Tool, p.d.Key, cause)
	case errors.Is(err, journal.ErrNotFound): // the flight may still start it
		oe.Status, oe.Message = InProgress, "the caller left before the action was recorded; it may still start ("+cause.Error()+")"
		base.Status, base.Err = InProgress, oe
	case err == nil && (rec.State == journal.StateAwaiting || rec.State.Settled() && p.tool.next(&rec, h.now()) == reissue.Answer):
		return h.fromJournal(ctx, p, rec)
	default:
		if err == nil {
			base.Attempts = len(rec.Attempts)
		}
		oe.Status, oe.Message = InProgress, "the caller left while the action was under way ("+cause.Error()+")"
		base.Status, base.Source, base.Err = InProgress, Executed, oe
	}
	h.emitJoined(ctx, p, base)
	return base
}
