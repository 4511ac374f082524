package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// Call runs one tool call through the journal and answers what happened.
// It always answers: Result.Status says what the outcome is (Rejected when
// the call itself was refused and provably nothing started; Err says why)
// and Result.Source how it was learned. A caller whose ctx ends while the
// tool runs is answered InProgress; the intent goes on and a re-issue is
// answered from the journal.
func (h *Harness) Call(ctx context.Context, c ToolCall) Result {
	p := prepared{call: c}
	if p.err = h.enter(); p.err == nil {
		defer h.exit()
		h.prepare(&p)
	}
	if p.err != nil {
		return h.rejectedEarly(ctx, &p)
	}
	return h.do(ctx, p)
}

// flightKey is what identical calls share: the key and the input's
// fingerprint. The same key with another input never joins a flight; its
// own Begin finds the mismatch.
type flightKey struct {
	key uuid.UUID
	fp  keyderive.Fingerprint
}

// do runs a prepared call in its flight: identical calls running at the same
// time in this process share one execution.
func (h *Harness) do(ctx context.Context, p prepared) Result {
	// The replay path's read is for a call the memo holds: a call it does
	// not is most likely new, and the read would only miss before Begin
	// (on bbolt 9 allocations of a new Keyed call's ~190). A re-issue the
	// memo forgot is answered by Begin instead, the same answer.
	if h.localReads && p.tool.journal && !p.unseen {
		if res, ok := h.replay(ctx, &p); ok {
			return res
		}
	}
	fk := flightKey{p.d.Key, p.d.Fingerprint}
	if job := h.checks.find(fk); job != nil {
		// Its outcome is being checked in the background: wait for that,
		// within the budget, rather than find the intent held.
		res := h.await(ctx, job, &p, h.checkWait(), true)
		res.CallID = p.call.ID
		h.emitJoined(ctx, &p, res)
		return res
	}
	res, err, joined := h.flights.Do(ctx, fk, func(fctx context.Context) (Result, error) {
		// The flight counts itself in: it may outlive every caller (they
		// leave when their contexts end), and Close must wait for it so
		// that its outcome is recorded before the journal closes.
		if err := h.enter(); err != nil {
			return Result{Tool: p.call.Tool, Key: p.d.Key, Status: Rejected, Err: err}, nil
		}
		defer h.exit()
		var res Result
		if !p.tool.journal {
			res = h.runUnjournaled(fctx, &p)
		} else {
			res = h.run(fctx, &p)
		}
		// Every caller left and fctx was cancelled: a refusal or an "in
		// progress" now is an artefact of that cancellation, not the
		// intent's answer. Returned as an error, it is not shared with a
		// caller that joins the dying flight: that one runs its own.
		if cause := context.Cause(fctx); fctx.Err() != nil && (res.Status == Rejected || res.Status == InProgress) {
			return res, cause
		}
		return res, nil
	})
	if err != nil {
		return h.left(ctx, &p, err)
	}
	res.CallID = p.call.ID
	if joined {
		if res.Source == Executed {
			res.Source = Collapsed
		}
		h.emitJoined(ctx, &p, res)
	}
	return res
}

// replay answers a call from a live settled record by one read, without
// joining a flight: the path of a model re-issuing a finished call. It
// declines (ok false) whenever Begin could decide anything else, and Begin
// then decides.
func (h *Harness) replay(ctx context.Context, p *prepared) (res Result, ok bool) {
	rec, err := h.store.Get(ctx, p.d.Key)
	if err != nil || !rec.State.Settled() || rec.Fingerprint != p.d.Fingerprint ||
		p.tool.next(&rec, h.now()) != reissue.Answer {
		return Result{}, false
	}
	f := h.newFlight(p)
	res = f.answer(ctx, f.fromRecord(rec))
	res.CallID = p.call.ID
	return res, true
}

// left answers a caller that stopped waiting for its flight: its context
// ended, or the flight died (runtime.Goexit in the tool). The journal says
// whether anything started: no record means nothing did (Rejected); a
// pending record means the intent is under way (InProgress); a settled one
// is answered.
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
	case errors.Is(err, journal.ErrNotFound):
		// Nothing is recorded yet, but the flight the caller left goes on
		// and may still begin and run the tool: "nothing started" could be
		// false a moment later.
		oe.Status, oe.Message = InProgress, "the caller left before the action was recorded; it may still start ("+cause.Error()+")"
		base.Status, base.Err = InProgress, oe
	case err == nil && (rec.State == journal.StateAwaiting || rec.State.Settled() && p.tool.next(&rec, h.now()) == reissue.Answer):
		f := h.newFlight(p)
		res := f.answer(ctx, f.fromRecord(rec))
		res.CallID = p.call.ID
		return res
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

// CallAll runs the tool calls of one model response. Identical calls (the
// same key and the same input) collapse into one execution: the first in
// order has the flight's Source, the others Collapsed. The same key with
// another input is not identical: it runs its own Begin and is suppressed
// as a mismatch. Distinct calls run concurrently, at most
// Options.Concurrency at a time. Results come back in the calls' order; a
// call refused before anything started has Status Rejected and its Err says
// why.
func (h *Harness) CallAll(ctx context.Context, calls []ToolCall) []Result {
	results := make([]Result, len(calls))
	if err := h.enter(); err != nil {
		for i, c := range calls {
			results[i] = h.rejectedEarly(ctx, &prepared{call: c, err: err})
		}
		return results
	}
	defer h.exit()
	type group struct {
		p    prepared
		idxs []int
		// after is an earlier group with the same key and another input:
		// this one begins once that one is answered, so the first in the
		// model's order runs and the other is suppressed as a mismatch.
		after *group
		done  chan struct{}
	}
	var groups []*group
	byKey := make(map[flightKey]*group, len(calls))
	firstOfKey := make(map[[16]byte]*group, len(calls))
	for i, c := range calls {
		p := prepared{call: c}
		if h.prepare(&p); p.err != nil {
			results[i] = h.rejectedEarly(ctx, &p)
			continue
		}
		fk := flightKey{p.d.Key, p.d.Fingerprint}
		if g, ok := byKey[fk]; ok {
			g.idxs = append(g.idxs, i)
			continue
		}
		g := &group{p: p, idxs: []int{i}, done: make(chan struct{}), after: firstOfKey[p.d.Key]}
		if g.after == nil {
			firstOfKey[p.d.Key] = g
		}
		byKey[fk] = g
		groups = append(groups, g)
	}

	sem := make(chan struct{}, h.opts.Concurrency)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(g.done)
			reject := func(err error) {
				for _, i := range g.idxs {
					results[i] = Result{CallID: calls[i].ID, Tool: calls[i].Tool, Status: Rejected, Key: g.p.d.Key, Err: err}
				}
			}
			if g.after != nil {
				select {
				case <-g.after.done:
				case <-ctx.Done():
					reject(ctx.Err())
					return
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				reject(ctx.Err())
				return
			}
			res := h.do(ctx, g.p)
			<-sem
			for n, i := range g.idxs {
				r := res
				r.CallID = calls[i].ID
				if n > 0 {
					if r.Source == Executed {
						r.Source = Collapsed
					}
					h.emitJoined(ctx, &g.p, r)
				}
				results[i] = r
			}
		}()
	}
	wg.Wait()
	return results
}
