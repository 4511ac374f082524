package harness

import (
	"context"
	"fmt"

	"github.com/agentonce/agentonce/journal/lease"
)

// A flight renews the lease of the intent it owns every LeaseTTL/3 for as
// long as it runs: while its tool runs, while it waits out a backoff or a
// settle window, while it reconciles. So a live owner never loses its
// intent because its tool is slow; only an owner that stopped renewing (a
// crash, a store it cannot reach) does. When a renewal is fenced (another
// owner or an operator took the intent) or the store stays unreachable
// until the lease would have run out, the flight's context is cancelled
// with ErrLeaseLost: the tool is asked to stop, the outcome cannot be
// recorded, and the caller is told unknown. An Unkeyed intent is not taken
// over by anyone before its attempt's settle window has passed either, so
// nobody runs it while the stopped attempt may still be acting.

// keepLease starts renewing f's lease (lease.Keep, the one renewal
// rule). The returned context ends, with cause ErrLeaseLost, when the
// lease is lost; the caller ends the renewal (f.lease.Stop) and then the
// context (cancel). The two are not wrapped in one stop function: that
// closure was an allocation of every call.
func (f *flight) keepLease(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.lease = lease.Keep(ctx, f.h.store, f.p.d.Key, f.token, f.p.tool.leaseTTL, lostLease(cancel))
	return ctx, cancel
}

// lostLease is what a lost lease does: cancel the owner's context with
// ErrLeaseLost and the reason.
func lostLease(cancel context.CancelCauseFunc) func(error) {
	return func(err error) { cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err)) }
}
