package harness

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// Call runs one tool call through the journal and answers what happened.
// A caller whose ctx ends while the tool runs is answered InProgress; the
// intent goes on and a re-issue is answered from the journal.
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

// flightKey is what identical calls share.
type flightKey struct {
	key uuid.UUID
	fp  keyderive.Fingerprint
}

// do runs a prepared call in its flight, shared by identical calls.
func (h *Harness) do(ctx context.Context, p prepared) Result {
	// A call the memo does not hold is most likely new: Begin answers it.
	if h.localReads && p.tool.journal && !p.unseen {
		if res, ok := h.replay(ctx, &p); ok {
			return res
		}
	}
	fk := flightKey{p.d.Key, p.d.Fingerprint}
	if job := h.checks.find(fk); job != nil { // being checked: wait for that
		res := h.await(ctx, job, &p, h.checkWait(), true)
		res.CallID = p.call.ID
		h.emitJoined(ctx, &p, res)
		return res
	}
	res, err, joined := h.flights.Do(ctx, fk, func(fctx context.Context) (Result, error) {
		// The flight may outlive every caller: Close waits for it too.
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
		// Every caller left: a refusal or an "in progress" now is an
		// artefact of the cancellation, not shared with a later joiner.
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
		res = h.collapsed(ctx, &p, res)
	}
	return res
}

// replay answers a call from a settled record by one read, unless Begin
// could decide otherwise.
func (h *Harness) replay(ctx context.Context, p *prepared) (res Result, ok bool) {
	rec, err := h.store.Get(ctx, p.d.Key)
	if err != nil || !rec.State.Settled() || rec.Fingerprint != p.d.Fingerprint ||
		p.tool.next(&rec, h.now()) != reissue.Answer {
		return Result{}, false
	}
	return h.fromJournal(ctx, p, rec), true
}

// CallAll runs the tool calls of one model response: identical calls
// collapse into one execution, distinct ones run concurrently (at most
// Options.Concurrency); results are in the calls' order.
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
		p     prepared
		idxs  []int
		after *group // an earlier group with the same key: begin after it
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
					r = h.collapsed(ctx, &g.p, r)
				}
				results[i] = r
			}
		}()
	}
	wg.Wait()
	return results
}
