package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// ReconcileFunc answers, for an Unkeyed tool whose attempt may have taken
// effect, "did the effect for this key happen?": Happened with the effect's
// result, DidNotHappen if it provably did not (the harness then runs the
// tool), or CannotTell (the outcome stays unknown and a later re-issue asks
// again). The zero Reconciliation is CannotTell.
//
// It may be asked as soon as an attempt ended without an answer, and a
// Happened then settles the intent; a DidNotHappen counts only once the
// tool's settle window has passed, and the tool runs again only when a
// second DidNotHappen, a settle window later, agrees. So a hook need only
// answer truthfully about the moment it is asked. It runs in a background
// check (Options.CheckWait), one call at a time per intent.
type ReconcileFunc func(ctx context.Context, key uuid.UUID, input json.RawMessage) Reconciliation

// Reconciliation is a Reconcile hook's answer; make one with Happened,
// DidNotHappen or CannotTell.
type Reconciliation struct {
	verdict reconcileVerdict
	output  json.RawMessage
	why     error
}

type reconcileVerdict uint8

const (
	cannotTell reconcileVerdict = iota
	happened
	didNotHappen
)

// Happened says the effect happened; output is its result, as the tool
// would have returned it.
func Happened(output json.RawMessage) Reconciliation {
	return Reconciliation{verdict: happened, output: output}
}

// DidNotHappen says the effect provably did not happen: the tool may run.
func DidNotHappen() Reconciliation { return Reconciliation{verdict: didNotHappen} }

// CannotTell says the hook cannot tell yet (the downstream is unreachable,
// or its record is not there yet); why says what stopped it. The outcome
// stays unknown.
func CannotTell(why error) Reconciliation { return Reconciliation{why: why} }

// settleThenReconcile waits until the downstream can no longer be acting on
// the attempt that just ended without an answer, then reconciles. settled
// reports that res answers the call; false means the effect provably did
// not happen and the tool may run again.
func (f *flight) settleThenReconcile(ctx context.Context, cause error) (res Result, settled bool) {
	if f.p.tool.Reconcile == nil {
		return f.reconcile(ctx, cause)
	}
	if d := f.p.tool.settle; d > 0 {
		f.eventDelay(ctx, EventSettle, retryclass.MaybeExecuted, d)
		if retryclass.Wait(ctx, d) != nil {
			return f.interrupted(ctx, cause)
		}
	}
	return f.reconcile(ctx, cause)
}

// reconcile asks an Unkeyed tool's Reconcile hook whether the effect
// happened. settled reports that res answers the call (the effect happened,
// or nobody can tell); false means it provably did not happen and the tool
// may run.
//
// A "did not happen" is believed only when a second one, a settle window
// later, agrees: a downstream slower than its tool declared has acted by
// then, and the second answer says so (Happened), where a single one would
// have let the tool run twice. A "happened" or a "cannot tell" is taken at
// once: neither runs anything.
func (f *flight) reconcile(ctx context.Context, cause error) (res Result, settled bool) {
	t := f.p.tool
	if t.Reconcile == nil {
		return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
			fmt.Errorf("%w; the tool has no Reconcile hook, so it was not run again", cause)), true
	}
	f.event(ctx, EventReconcile, cause)
	r := f.askReconcile(ctx)
	if r.verdict == didNotHappen {
		if d := t.settle; d > 0 {
			f.eventDelay(ctx, EventSettle, retryclass.MaybeExecuted, d)
			if retryclass.Wait(ctx, d) != nil {
				return f.interrupted(ctx, cause)
			}
		}
		f.event(ctx, EventReconcile, cause)
		r = f.askReconcile(ctx)
	}
	switch r.verdict {
	case happened:
		return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: r.output}, Succeeded, Reconciled, r.output, nil), true
	case didNotHappen:
		// Twice, a settle window apart: no attempt of the intent took
		// effect, so a failure of the next one is again "nothing was done".
		f.mayHaveRun = false
		return Result{}, false
	}
	why := r.why
	if why == nil {
		why = fmt.Errorf("no reason given")
	}
	return f.completeErr(ctx, journal.StateUnknown, retryclass.MaybeExecuted,
		fmt.Errorf("%w; reconcile cannot tell yet: %w", cause, why)), true
}

// reconcileEarly asks the Reconcile hook at once, before the settle window:
// a "happened" is the truth whenever it comes, and settles the intent
// without a wait (the common lost answer). Any other answer is not taken
// yet: the downstream may still be acting. ok reports that res answers
// the call.
func (f *flight) reconcileEarly(ctx context.Context, cause error) (res Result, ok bool) {
	f.event(ctx, EventReconcile, cause)
	r := f.askReconcile(ctx)
	if r.verdict != happened {
		return Result{}, false
	}
	return f.complete(ctx, journal.Completion{State: journal.StateSucceeded, Output: r.output}, Succeeded, Reconciled, r.output, nil), true
}

// askReconcile runs the hook under the tool's timeout; a panic in it is a
// "cannot tell".
func (f *flight) askReconcile(ctx context.Context) (r Reconciliation) {
	t := f.p.tool
	rctx := f.h.attemptContext(ctx, t, f.p, "")
	if pe := guarded(rctx, t, func(rctx context.Context) { r = t.Reconcile(rctx, f.p.d.Key, f.p.call.Input) }); pe != nil {
		return CannotTell(pe)
	}
	return r
}

// DefaultUnkeyedTimeout bounds each attempt of an Unkeyed tool whose Timeout
// is zero, so that its quiet time (start + Timeout + Settle), and with it
// reconciliation and takeover after a crash, has an end.
const DefaultUnkeyedTimeout = 30 * time.Second
