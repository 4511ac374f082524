package harness

import (
	"context"
	"sync"
)

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
			results[i] = h.rejectedEarly(ctx, c, Result{CallID: c.ID, Tool: c.Tool, Status: Rejected, Err: err})
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
		p := h.prepare(c)
		if p.err != nil {
			results[i] = h.rejectedEarly(ctx, c, p.rejected())
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
