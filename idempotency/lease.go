package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// keeper renews a running handler's lease every ttl/3, on a timer rather
// than a goroutine of its own, as the harness's flights do: a handler
// shorter than ttl/3 costs one timer armed and stopped. A fenced renewal
// (an operator resolved the key) or a journal unreachable until the lease
// would run out cancels the handler's context with ErrLeaseLost.
type keeper struct {
	store  journal.Store
	key    uuid.UUID
	token  uint64
	ttl    time.Duration
	cancel context.CancelCauseFunc

	mu       sync.Mutex // guards stopped, timer and deadline
	stopped  bool
	timer    *time.Timer
	deadline time.Time // when the lease runs out unless renewed (monotonic)
}

// keepLease starts renewing; stop ends the renewal (and the context).
func keepLease(ctx context.Context, store journal.Store, key uuid.UUID, token uint64, ttl time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := &keeper{store: store, key: key, token: token, ttl: ttl, cancel: cancel}
	k.mu.Lock() // the first tick may come before AfterFunc returns
	k.deadline = time.Now().Add(ttl)
	k.timer = time.AfterFunc(ttl/3, func() { k.tick(ctx) })
	k.mu.Unlock()
	return ctx, func() {
		k.mu.Lock()
		k.stopped = true
		k.timer.Stop()
		k.mu.Unlock()
		cancel(nil)
	}
}

func (k *keeper) tick(ctx context.Context) {
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if stopped {
		return
	}
	interval := k.ttl / 3
	start := time.Now()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), interval)
	_, err := k.store.Renew(rctx, journal.RenewRequest{Key: k.key, Token: k.token, LeaseTTL: k.ttl})
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
