package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
)

func openBolt(t *testing.T, opts *journal.Options) journal.Store {
	t.Helper()
	s, err := journal.OpenBolt(filepath.Join(t.TempDir(), "journal.db"), opts)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	return s
}

func TestBoltConformance(t *testing.T) { journaltest.Run(t, openBolt) }

func TestMemoryConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store {
		return journal.NewMemory(opts)
	})
}
