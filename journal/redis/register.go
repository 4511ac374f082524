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
	for _, scheme := range []string{"redis", "rediss", "redis+cluster", "rediss+cluster"} {
		journal.Register(scheme, open)
	}
}
