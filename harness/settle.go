package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

const (
	// DefaultSettle is an Unkeyed tool's settle window when Tool.Settle is
	// zero: a conservative guess at how long a downstream goes on with a
	// request after its client gave up.
	DefaultSettle = 2 * time.Minute
	// defaultCheckWait is Options.CheckWait when it is zero.
	defaultCheckWait = 2 * time.Second
)

// errClosing ends a background check's context when the Harness closes.
var errClosing = errors.New("harness closing")

// checks are a Harness's background checks.
type checks struct {
	ctx  context.Context // ends when the Harness closes
	stop context.CancelFunc
	wg   sync.WaitGroup // checks running; Add only from a flight Close waits for

	mu sync.Mutex // guards m
	m  map[flightKey]*checkJob
	n  atomic.Int32 // len(m), read without mu: most calls find no check
}

// checkJob is one background check.
type checkJob struct {
	done    chan struct{} // closed once res is set and the job left checks.m
	res     Result
	checkAt time.Time // when the outcome is checked (its settle window ends)
	tries   int       // the attempts when the check started
}

func (c *checks) find(k flightKey) *checkJob {
	if c.n.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// checkWait is how long a caller waits for an outcome being checked.
func (h *Harness) checkWait() time.Duration {
	if w := h.opts.CheckWait; w != 0 {
		return max(w, 0)
	}
	return defaultCheckWait
}

// waitLeft is what is left of this call's wait budget, from its first wait.
func (f *flight) waitLeft() time.Duration {
	if f.waitUntil.IsZero() {
		f.waitUntil = time.Now().Add(f.h.checkWait())
	}
	return time.Until(f.waitUntil)
}

// settling answers a call that found the intent held only by an open
// settle window: it waits for the window if that fits the call's budget
// (again: ask Begin again), else says so.
func (f *flight) settling(ctx context.Context, rec *journal.Record) (res Result, again bool) {
	q := reissue.QuietAt(rec)
	if d := q.Sub(f.h.now()); d <= f.waitLeft() {
		f.event(ctx, Event{Kind: EventSettle, Class: retryclass.MaybeExecuted, Delay: d})
		if retryclass.Wait(ctx, d+time.Millisecond) == nil {
			return Result{}, true
		}
	}
	then := "the first call after then asks the tool's Reconcile hook before anything runs again"
	if f.p.tool.Effect == journal.Unkeyed && f.p.tool.Reconcile == nil {
		then = "a call after then is answered unknown (the tool has no Reconcile hook) until an operator resolves it"
	} else if f.p.tool.Effect != journal.Unkeyed {
		then = "a call after then runs it again with the same key"
	}
	return checking(f.p, len(rec.Attempts), q,
		"no process is running this action now, but an earlier attempt may still be acting downstream until "+
			q.UTC().Format(time.RFC3339)+" (its settle window); "+then), false
}

// check runs rest on a goroutine the Harness owns, renewing the lease, and
// answers with its outcome if that comes within the call's wait budget,
// else InProgress, from checkAt (docs/harness.md, "Checking an Unkeyed
// outcome"). A flight already in the background runs rest itself.
func (f *flight) check(ctx context.Context, checkAt time.Time, rest func(context.Context) Result) Result {
	if f.detached {
		return rest(ctx)
	}
	h := f.h
	k := flightKey{f.p.d.Key, f.p.d.Fingerprint}
	job := &checkJob{done: make(chan struct{}), checkAt: checkAt, tries: f.tries}
	bctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	f.lease.OnLost(lostLease(cancel))
	f.detached = true
	h.checks.mu.Lock()
	if _, dup := h.checks.m[k]; !dup {
		h.checks.n.Add(1)
	}
	h.checks.m[k] = job
	h.checks.mu.Unlock()
	h.checks.wg.Add(1)
	wait := f.waitLeft() // before the check owns f
	go func() {
		stop := context.AfterFunc(h.checks.ctx, func() { cancel(errClosing) })
		defer func() {
			stop()
			f.lease.Stop()
			cancel(nil)
			if job.res.Status == 0 { // rest ended by runtime.Goexit in the tool
				job.res = checking(f.p, f.tries, time.Time{},
					"the check ended without an outcome (runtime.Goexit in the tool); the intent stays pending until its lease expires")
			}
			h.checks.mu.Lock()
			if h.checks.m[k] == job {
				delete(h.checks.m, k)
				h.checks.n.Add(-1)
			}
			h.checks.mu.Unlock()
			close(job.done)
			h.checks.wg.Done()
		}()
		job.res = rest(bctx)
	}()
	res := h.await(ctx, job, f.p, wait, false)
	h.emit(ctx, resultEvent(f.base, res))
	return res
}

// await waits up to wait for job's outcome; joined: not the check's caller.
func (h *Harness) await(ctx context.Context, job *checkJob, p *prepared, wait time.Duration, joined bool) Result {
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-job.done:
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-job.done:
		res := job.res
		if joined && res.Source == Executed {
			res.Source = Collapsed
		}
		return res
	default:
	}
	res := checking(p, job.tries, job.checkAt,
		"an attempt may have taken effect and its outcome is being checked: once the downstream can no longer be acting on it, "+
			"the tool's Reconcile hook is asked, and the tool runs again only if the hook says twice, a settle window apart, that nothing happened")
	if joined {
		res.Source = NoSource
	}
	return res
}

// checking is the InProgress answer for an outcome being checked.
func checking(p *prepared, tries int, checkAt time.Time, msg string) Result {
	return Result{Tool: p.tool.Name, Key: p.d.Key, Status: InProgress, Source: Executed, Attempts: tries,
		Err: &OutcomeError{Tool: p.tool.Name, Key: p.d.Key, Class: retryclass.MaybeExecuted, Status: InProgress,
			Message: msg, CheckAt: checkAt}}
}

// interrupted answers a check whose wait ended early: pending when the
// Harness closes, as after a crash, else unknown.
func (f *flight) interrupted(ctx context.Context, cause error) Result {
	if errors.Is(context.Cause(ctx), errClosing) {
		f.lease.Stop()
		return f.answer(ctx, checking(f.p, f.tries, time.Time{},
			"the harness closed before this outcome was checked: the intent stays pending, and the first call once its settle window has passed checks it ("+
				cause.Error()+")"))
	}
	return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
		fmt.Errorf("%w; the downstream may still be acting on it, so it was not reconciled yet (a re-issue reconciles)", cause))
}

// waitSettle waits out the tool's settle window; false when it ended early.
func (f *flight) waitSettle(ctx context.Context) bool {
	d := f.p.tool.settle
	if d <= 0 {
		return true
	}
	f.event(ctx, Event{Kind: EventSettle, Class: retryclass.MaybeExecuted, Delay: d})
	return retryclass.Wait(ctx, d) == nil
}

// reconciled records the output of a Reconcile hook's "happened".
func (f *flight) reconciled(ctx context.Context, out json.RawMessage) Result {
	return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: out}, Succeeded, Reconciled, out, nil)
}

// reconcileEarly asks the Reconcile hook before the settle window, taking
// only a "happened".
func (f *flight) reconcileEarly(ctx context.Context, cause error) (res Result, ok bool) {
	f.event(ctx, Event{Kind: EventReconcile, Err: cause})
	out, ok := f.askReconcile(ctx).Happened()
	if !ok {
		return Result{}, false
	}
	return f.reconciled(ctx, out), true
}

// reconcile asks an Unkeyed tool's Reconcile hook whether the effect
// happened. settled reports that res answers the call; false means it
// provably did not happen: a "did not happen" is believed only when a
// second one, a settle window later, agrees.
func (f *flight) reconcile(ctx context.Context, cause error) (res Result, settled bool) {
	t := f.p.tool
	if t.Reconcile == nil {
		f.person = true
		return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
			fmt.Errorf("%w; the tool has no Reconcile hook, so it was not run again", cause)), true
	}
	f.event(ctx, Event{Kind: EventReconcile, Err: cause})
	r := f.askReconcile(ctx)
	if r.DidNotHappen() {
		if !f.waitSettle(ctx) {
			return f.interrupted(ctx, cause), true
		}
		f.event(ctx, Event{Kind: EventReconcile, Err: cause})
		r = f.askReconcile(ctx)
	}
	if out, ok := r.Happened(); ok {
		return f.reconciled(ctx, out), true
	}
	if r.DidNotHappen() { // twice: no attempt took effect
		f.mayHaveRun = false
		return Result{}, false
	}
	why := r.Why()
	if why == nil {
		why = fmt.Errorf("no reason given")
	}
	f.person = true
	return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
		fmt.Errorf("%w; reconcile cannot tell yet: %w", cause, why)), true
}

// askReconcile runs the hook (guarded); a panic in it is a "cannot tell".
func (f *flight) askReconcile(ctx context.Context) (r downstream.Reconciliation) {
	t := f.p.tool
	rctx := f.h.attemptContext(ctx, t, f.p, "")
	if pe := guarded(rctx, t, func(rctx context.Context) { r = t.Reconcile(rctx, f.p.d.Key, f.p.call.Input) }); pe != nil {
		return downstream.CannotTell(pe)
	}
	return r
}
