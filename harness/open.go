package harness

import (
	"context"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// OpenStore opens the journal at location: a postgres:// or postgresql://
// URL opens the PostgreSQL store (shared by a fleet of agent processes);
// anything else is the path of a bbolt file, created if missing (the
// embedded default). opts may be nil.
func OpenStore(ctx context.Context, location string, opts *journal.Options) (journal.Store, error) {
	if postgres.IsURL(location) {
		return postgres.Open(ctx, location, &postgres.Options{Journal: opts})
	}
	return journal.OpenBolt(location, opts)
}

// Open opens the journal at location (see OpenStore) and returns a Harness
// on it. Close closes the journal too.
func Open(ctx context.Context, location string, opts *Options) (*Harness, error) {
	var jo *journal.Options
	if opts != nil {
		jo = opts.Journal
	}
	st, err := OpenStore(ctx, location, jo)
	if err != nil {
		return nil, err
	}
	h := New(st, opts)
	h.ownStore = true
	return h, nil
}
