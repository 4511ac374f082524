package harness

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// The harness knows a store through journal.Store and through the optional
// capabilities below, which it looks for with a type assertion. A store
// that wraps another (for metrics or tracing) keeps a capability by
// forwarding its method.

// TxCompleter is a store that can run a tool's effect inside the
// transaction that records the intent as succeeded, so both commit or
// neither does (the PostgreSQL store). A Tool with InTx needs one.
//
// CompleteWith checks the fence before effect runs (journal.ErrFenced,
// journal.ErrNotFound); returns effect's error as is when effect fails (the
// transaction rolled back: nothing happened); and wraps
// journal.ErrOutcomeUncertain when the commit's fate is unknown. effect
// finds the store's transaction in its context (postgres.TxFrom).
type TxCompleter interface {
	CompleteWith(ctx context.Context, key uuid.UUID, token uint64, effect func(ctx context.Context) ([]byte, error)) (journal.Record, error)
}

// Clock is a store that shows the clock it judges leases and expiry by;
// the harness then judges expiry on its replay path by the same clock.
type Clock interface {
	Now() time.Time
}

// LocalReader is a store whose reads are local and cheap (bbolt, memory):
// the harness answers a re-issued settled call by one Get before joining a
// flight, when its memo of recent calls holds the call (one it does not
// hold is most likely new, and goes to Begin without the read). A store
// without it is treated as remote, where that read would be a round trip
// on top of Begin's.
type LocalReader interface {
	LocalReads() bool
}
