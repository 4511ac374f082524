package journal_test

import (
	"path/filepath"
	"testing"
	"time"

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

// The hammer at a larger scale than the conformance suite runs it.
func TestHammer(t *testing.T) {
	opts := journaltest.HammerOptions{Goroutines: 64, Keys: 32, Rounds: 3}
	if testing.Short() {
		opts = journaltest.HammerOptions{Goroutines: 16, Keys: 16, Rounds: 2}
	}
	for name, open := range map[string]func(*testing.T, *journal.Options) journal.Store{
		"bolt": openBolt,
		"memory": func(t *testing.T, opts *journal.Options) journal.Store {
			return journal.NewMemory(opts)
		},
	} {
		t.Run(name, func(t *testing.T) {
			clk := &journaltest.Clock{}
			s := open(t, &journal.Options{Now: clk.Now, MaxBatchDelay: time.Duration(0)})
			defer s.Close()
			journaltest.Hammer(t, s, clk, opts)
		})
	}
}
