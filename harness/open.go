package harness

import (
	"context"

	"github.com/agentonce/agentonce/journal"
)

// Open opens the journal at location with journal.Open and returns a
// Harness on it; Close closes the journal too. A path is a bbolt file,
// created if missing (the embedded default); a postgres:// URL opens the
// PostgreSQL store shared by a fleet, once the program imports it:
//
//	import _ "github.com/agentonce/agentonce/journal/postgres"
//
// On a bbolt file, the Harness also serves agentctl over a unix socket
// beside it (Options.Inspect), since the file's lock keeps agentctl out
// while the agent runs.
func Open(ctx context.Context, location string, opts *Options) (*Harness, error) {
	var jo *journal.Options
	if opts != nil {
		jo = opts.Journal
	}
	st, err := journal.Open(ctx, location, jo)
	if err != nil {
		return nil, err
	}
	h := New(st, opts)
	h.ownStore = true
	if err := h.serveInspect(); err != nil {
		st.Close()
		return nil, err
	}
	return h, nil
}
