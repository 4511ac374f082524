package harness

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// The optional capabilities of a store, found by a type assertion on their
// method: a store that wraps another keeps one by forwarding it.

// txCompleter is a store that runs a tool's effect inside the transaction
// that records it succeeded (PostgreSQL, bbolt): a Tool with InTx needs
// one. CompleteWith checks the fence first, returns effect's error as is
// (rolled back), and wraps journal.ErrOutcomeUncertain when the commit's
// fate is unknown.
type txCompleter interface {
	CompleteWith(ctx context.Context, key uuid.UUID, token uint64, effect func(ctx context.Context) ([]byte, error)) (journal.Record, error)
}

// clock is a store that shows the clock it judges leases and expiry by.
type clock interface {
	Now() time.Time
}

// localReader is a store whose reads are local and cheap (bbolt, memory).
type localReader interface {
	LocalReads() bool
}
