package harness

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// The harness knows a store through journal.Store and through the optional
// capabilities below, which it looks for with a type assertion on their
// method. They are unexported, as the harness is their only consumer: a
// store has one by having the method (the bbolt and PostgreSQL stores
// have CompleteWith, bbolt and memory LocalReads and Now), and a store
// that wraps another (for metrics or tracing) keeps a capability by
// forwarding the method.

// txCompleter is a store that can run a tool's effect inside the
// transaction that records the intent as succeeded, so both commit or
// neither does (the PostgreSQL store). A Tool with InTx needs one.
//
// CompleteWith checks the fence before effect runs (journal.ErrFenced,
// journal.ErrNotFound); returns effect's error as is when effect fails (the
// transaction rolled back: nothing happened); and wraps
// journal.ErrOutcomeUncertain when the commit's fate is unknown. effect
// finds the store's transaction in its context (postgres.TxFrom).
type txCompleter interface {
	CompleteWith(ctx context.Context, key uuid.UUID, token uint64, effect func(ctx context.Context) ([]byte, error)) (journal.Record, error)
}

// clock is a store that shows the clock it judges leases and expiry by;
// the harness then judges expiry on its replay path by the same clock.
type clock interface {
	Now() time.Time
}

// localReader is a store whose reads are local and cheap (bbolt, memory):
// the harness answers a re-issued settled call by one Get before joining a
// flight, when its memo of recent calls holds the call (one it does not
// hold is most likely new, and goes to Begin without the read). A store
// without it is treated as remote, where that read would be a round trip
// on top of Begin's.
type localReader interface {
	LocalReads() bool
}
