package redis

import (
	"context"

	"github.com/agentonce/agentonce/journal"
)

func init() {
	open := func(ctx context.Context, location string, opts *journal.Options) (journal.Store, error) {
		var o Options
		if opts != nil {
			o.Journal = *opts
		}
		return Open(ctx, location, &o)
	}
	journal.Register("redis", open)
	journal.Register("rediss", open)
}
