package journal

import (
	"time"

	"github.com/google/uuid"
)

// Options configures a store. A nil *Options means defaults; each field's
// zero value is its default. Fields that apply to one store say so.
type Options struct {
	// Namespace is the secret UUIDv5 namespace for a new journal. Zero
	// means: keep the one stored in the journal, or generate one at random
	// when the journal is created. A non-zero value that differs from the
	// stored one is an error (keys would silently change).
	Namespace uuid.UUID

	// ReadOnly opens the journal for inspection: every write returns
	// ErrReadOnly and the file is never modified.
	ReadOnly bool

	// LockTimeout is how long OpenBolt waits for another process's file
	// lock before returning ErrInUse. Zero means 1 second. (bbolt only.)
	LockTimeout time.Duration

	// MaxBatchSize and MaxBatchDelay tune group commit: concurrent writes
	// that arrive within MaxBatchDelay share one fsync, up to MaxBatchSize
	// writes. Zero MaxBatchSize means 256. Zero MaxBatchDelay means no
	// wait: a group holds the writes that queued while the previous group
	// committed, so its size follows the concurrency and a lone write is
	// committed at once. (bbolt only.)
	MaxBatchSize  int
	MaxBatchDelay time.Duration

	// Now is the store's clock, by which it judges leases, settle windows
	// and TTLs: a test seam. Nil means time.Now. (bbolt and in-memory only:
	// the PostgreSQL store ignores it, the server's clock decides.)
	Now func() time.Time
}
