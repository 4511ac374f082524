package postgres_test

import (
	"testing"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
)

// TestConformance runs the journal conformance suite on PostgreSQL, each
// subtest in a schema of its own.
func TestConformance(t *testing.T) {
	pgURL(t)
	journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store {
		return openStore(t, opts)
	})
}
