package harness

import (
	"context"
	"sync"
)

// CallAll runs the tool calls of one model response. Calls with the same
// intent collapse into one execution (the first in order is Executed, the
// others Collapsed); distinct calls run concurrently, at most
// Options.Concurrency at a time. Results come back in the calls' order; a
// call that could not be answered has Status Rejected and its Err says why.
func (h *Harness) CallAll(ctx context.Context, calls []Call) []Result {
	results := make([]Result, len(calls))
	if err := h.enter(); err != nil {
		for i, c := range calls {
			results[i] = Result{CallID: c.ID, Tool: c.Tool, Status: Rejected, Err: err}
		}
		return results
	}
	defer h.exit()
	type group struct {
		p    prepared
		idxs []int
	}
	var groups []*group
	byKey := make(map[[16]byte]*group, len(calls))
	for i, c := range calls {
		p := h.prepare(c)
		if p.err != nil {
			results[i] = p.rejected()
			continue
		}
		if g, ok := byKey[p.d.Key]; ok {
			g.idxs = append(g.idxs, i)
			continue
		}
		g := &group{p: p, idxs: []int{i}}
		byKey[p.d.Key] = g
		groups = append(groups, g)
	}

	sem := make(chan struct{}, h.opts.Concurrency)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for _, i := range g.idxs {
					results[i] = Result{CallID: calls[i].ID, Tool: calls[i].Tool, Status: Rejected, Key: g.p.d.Key, Err: ctx.Err()}
				}
				return
			}
			res := h.do(ctx, g.p)
			<-sem
			for n, i := range g.idxs {
				r := res
				r.CallID = calls[i].ID
				if n > 0 {
					if r.Status == Executed {
						r.Status = Collapsed
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
