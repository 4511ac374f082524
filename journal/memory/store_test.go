package memory_test

import (
	"testing"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

func TestMemoryConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store {
		return memory.New(opts)
	})
}

// The hammer at a larger scale than the conformance suite runs it.
func TestHammer(t *testing.T) {
	opts := journaltest.HammerOptions{Goroutines: 64, Keys: 32, Rounds: 3}
	if testing.Short() {
		opts = journaltest.HammerOptions{Goroutines: 16, Keys: 16, Rounds: 2}
	}
	clk := &journaltest.Clock{}
	s := memory.New(&journal.Options{Now: clk.Now})
	defer s.Close()
	journaltest.Hammer(t, s, clk, opts)
}
