package redis

import (
	"context"

	"github.com/agentonce/agentonce/journal"
)

func init() {
	open := func(ctx context.Context, location string, jo journal.Options, o Options) (journal.Store, error) {
		o.Journal = jo
		return Open(ctx, location, &o)
	}
	journal.Register("redis", open)
	journal.Register("rediss", open)
}
