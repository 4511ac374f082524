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
// outcome is about to be recorded (release) or the flight ends.
type leaseKeeper struct {
	once sync.Once
	quit chan struct{}
	done chan struct{}
}

// keepLease starts renewing f's lease. The returned context ends, with
// cause ErrLeaseLost, when the lease is lost; stop ends the renewal and
// the context.
func (f *flight) keepLease(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := &leaseKeeper{quit: make(chan struct{}), done: make(chan struct{})}
	f.lease = k
	ttl := f.p.tool.leaseTTL
	go func() {
		defer close(k.done)
		if err := f.renew(ctx, k.quit, ttl); err != nil {
			cancel(err)
		}
	}()
	return ctx, func() {
		k.release()
		cancel(nil)
	}
}

// renew renews every ttl/3 until quit is closed, and returns why it had to
// stop otherwise. A failed renewal is tried again sooner; the lease counts
// as lost once a fence says so, or once the last successful renewal's ttl
// has run out (measured on this process's monotonic clock, which a wall
// clock jump does not move).
func (f *flight) renew(ctx context.Context, quit <-chan struct{}, ttl time.Duration) error {
	interval := ttl / 3
	deadline := time.Now().Add(ttl)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return nil
		case <-t.C:
		}
		start := time.Now()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), interval)
		_, err := f.h.store.Renew(rctx, journal.RenewRequest{Key: f.p.d.Key, Token: f.token, LeaseTTL: ttl})
		rcancel()
		switch {
		case err == nil:
			deadline = start.Add(ttl)
			t.Reset(interval)
		case errors.Is(err, journal.ErrFenced), errors.Is(err, journal.ErrNotFound):
			return fmt.Errorf("%w: %w", ErrLeaseLost, err)
		case time.Until(deadline) < interval/4:
			return fmt.Errorf("%w: the journal could not be reached to renew it: %w", ErrLeaseLost, err)
		default:
			t.Reset(min(interval/4, time.Until(deadline)/2))
		}
	}
}

// release stops renewing; it is safe on a nil keeper and more than once.
func (k *leaseKeeper) release() {
	if k == nil {
		return
	}
	k.once.Do(func() { close(k.quit) })
	<-k.done
}
