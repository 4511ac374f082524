package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentonce/agentonce/journal"
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

// leaseKeeper renews the lease of an intent its flight owns until the
// outcome is about to be recorded (release) or the flight ends. It runs on
// a timer, not a goroutine of its own: a call shorter than LeaseTTL/3 (most
// are) costs one timer armed and stopped.
type leaseKeeper struct {
	f   *flight
	ttl time.Duration

	mu       sync.Mutex              // guards cancel, stopped and timer, and the deadline below
	cancel   context.CancelCauseFunc // what a lost lease cancels (rebind moves it)
	stopped  bool
	timer    *time.Timer
	deadline time.Time // when the lease runs out unless renewed (monotonic)
}

// keepLease starts renewing f's lease. The returned context ends, with
// cause ErrLeaseLost, when the lease is lost; stop ends the renewal and
// the context.
func (f *flight) keepLease(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := &leaseKeeper{f: f, ttl: f.p.tool.leaseTTL, cancel: cancel}
	k.mu.Lock() // the first tick may come before AfterFunc returns
	k.deadline = time.Now().Add(k.ttl)
	k.timer = time.AfterFunc(k.ttl/3, func() { k.tick(ctx) })
	k.mu.Unlock()
	f.lease = k
	return ctx, func() {
		k.release()
		cancel(nil)
	}
}

// tick renews once, on the timer's goroutine, and arms the next tick: a
// renewal every ttl/3, a failed one tried again sooner. The lease counts as
// lost once a fence says so, or once the last successful renewal's ttl has
// nearly run out (measured on this process's monotonic clock, which a wall
// clock jump does not move).
func (k *leaseKeeper) tick(ctx context.Context) {
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if stopped {
		return
	}
	interval := k.ttl / 3
	start := time.Now()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), interval)
	_, err := k.f.h.store.Renew(rctx, journal.RenewRequest{Key: k.f.p.d.Key, Token: k.f.token, LeaseTTL: k.ttl})
	rcancel()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	switch {
	case err == nil:
		k.deadline = start.Add(k.ttl)
		k.timer.Reset(interval)
	case errors.Is(err, journal.ErrFenced), errors.Is(err, journal.ErrNotFound):
		k.cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err))
	case time.Until(k.deadline) < interval/4:
		k.cancel(fmt.Errorf("%w: the journal could not be reached to renew it: %w", ErrLeaseLost, err))
	default:
		k.timer.Reset(min(interval/4, time.Until(k.deadline)/2))
	}
}

// rebind makes a lost lease cancel cancel instead: the flight moved to a
// background check with a context of its own (check.go).
func (k *leaseKeeper) rebind(cancel context.CancelCauseFunc) {
	k.mu.Lock()
	k.cancel = cancel
	k.mu.Unlock()
}

// release stops renewing; it is safe on a nil keeper and more than once. A
// renewal already under way may still land; it renews this owner's own
// lease, or is fenced once the outcome is recorded, which then changes
// nothing.
func (k *leaseKeeper) release() {
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
}
