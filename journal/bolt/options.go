package bolt

import (
	"context"
	"strings"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// Options configures a bbolt store. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Journal holds the options every store shares; zero means defaults.
	Journal journal.Options

	// LockTimeout is how long Open waits for another process's file lock
	// before returning journal.ErrInUse. Zero means 1 second.
	LockTimeout time.Duration

	// MaxBatchSize and MaxBatchDelay tune group commit: concurrent writes
	// that arrive within MaxBatchDelay share one fsync, up to MaxBatchSize
	// writes. Zero MaxBatchSize means 256. Zero MaxBatchDelay means no
	// wait: a group holds the writes that queued during the previous one.
	MaxBatchSize  int
	MaxBatchDelay time.Duration
}

func init() { journal.Register(journal.PathScheme, openLocation) }

// openLocation is Open for journal.Open: location is a plain path or a
// file:// URL.
func openLocation(_ context.Context, location string, jo journal.Options, o Options) (journal.Store, error) {
	if len(location) > len(journal.PathScheme)+3 && strings.EqualFold(location[:len(journal.PathScheme)+3], journal.PathScheme+"://") {
		location = location[len(journal.PathScheme)+3:]
	}
	o.Journal = jo
	return Open(location, &o)
}
