// Package lease keeps the lease of an intent its owner works on: the one
// renewal rule of the harness's flights and the idempotency middleware's
// handlers, which renew through journal.Store.Renew.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Keeper renews a lease its owner holds, every ttl/3, on a timer rather
// than a goroutine. The lease counts as lost once a renewal is fenced
// (another owner, or an operator, took the intent) or once the last
// successful renewal's ttl has nearly run out, by this process's monotonic
// clock, while the store could not be reached. It is safe for concurrent
// use.
type Keeper struct {
	store journal.Store
	ctx   context.Context // its values go to Renew (WithoutCancel, made at a tick); not its cancellation
	key   uuid.UUID
	token uint64
	ttl   time.Duration

	mu       sync.Mutex // guards lost, stopped, timer and deadline
	lost     func(error)
	stopped  bool
	timer    *time.Timer
	deadline time.Time // when the lease runs out unless renewed (monotonic)
}

// Keep starts renewing the lease of key, held with token, by ttl (zero:
// journal.DefaultLeaseTTL) from each renewal. lost is called once, from
// the timer's goroutine, with the reason when the lease is lost: an error
// wrapping journal.ErrFenced or journal.ErrNotFound, or the store's error
// when it could not be reached in time. Stop ends the renewal.
func Keep(ctx context.Context, s journal.Store, key uuid.UUID, token uint64, ttl time.Duration, lost func(error)) *Keeper {
	ttl = machine.LeaseTTL(ttl)
	k := &Keeper{store: s, ctx: ctx, key: key, token: token, ttl: ttl, lost: lost}
	k.mu.Lock() // the first tick may come before AfterFunc returns
	k.deadline = time.Now().Add(ttl)
	k.timer = time.AfterFunc(ttl/3, k.tick)
	k.mu.Unlock()
	return k
}

// OnLost makes a lost lease call lost instead (the owner's work moved to
// another context).
func (k *Keeper) OnLost(lost func(error)) {
	k.mu.Lock()
	k.lost = lost
	k.mu.Unlock()
}

// Stop ends the renewal; it is safe on a nil keeper and more than once. A
// renewal already under way may still land, harmlessly.
func (k *Keeper) Stop() {
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
}

// tick renews once and arms the next tick: a renewal every ttl/3, a
// failed one tried again sooner.
func (k *Keeper) tick() {
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if stopped {
		return
	}
	interval := k.ttl / 3
	start := time.Now()
	// WithoutCancel here, not in Keep: most owners finish before it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), interval)
	_, err := k.store.Renew(rctx, journal.RenewRequest{Key: k.key, Token: k.token, LeaseTTL: k.ttl})
	cancel()
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
		k.stopped = true
		k.lost(err)
	case time.Until(k.deadline) < interval/4:
		k.stopped = true
		k.lost(fmt.Errorf("the journal could not be reached to renew it: %w", err))
	default:
		k.timer.Reset(min(interval/4, time.Until(k.deadline)/2))
	}
}
