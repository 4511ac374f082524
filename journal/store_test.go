package journal_test

import (
	"testing"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
)

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
	clk := &journaltest.Clock{}
	s := journal.NewMemory(&journal.Options{Now: clk.Now})
	defer s.Close()
	journaltest.Hammer(t, s, clk, opts)
}
