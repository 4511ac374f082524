package redis

import (
	"context"
	"fmt"

	"github.com/agentonce/agentonce/journal"
)

func init() {
	open := func(ctx context.Context, location string, opts *journal.Options) (journal.Store, error) {
		var o Options
		if opts != nil {
			switch so := opts.StoreOptions.(type) {
			case nil:
			case *Options:
				if so != nil {
					o = *so
				}
			default:
				return nil, fmt.Errorf("journal/redis: %w: Options.StoreOptions is a %T; a Redis journal takes a *redis.Options", journal.ErrInvalid, so)
			}
			o.Journal = opts
		}
		return Open(ctx, location, &o)
	}
	journal.Register("redis", open)
	journal.Register("rediss", open)
}
