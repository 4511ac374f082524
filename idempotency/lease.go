package idempotency

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/lease"
)

// keepLease renews a running handler's lease (lease.Keep); a lost lease
// cancels the context with ErrLeaseLost. stop ends both.
func keepLease(ctx context.Context, store journal.Store, key uuid.UUID, token uint64, ttl time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := lease.Keep(ctx, store, key, token, ttl, func(err error) {
		cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err))
	})
	return ctx, func() {
		k.Stop()
		cancel(nil)
	}
}
