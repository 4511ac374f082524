package bolt_test

import (
	"cmp"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

func openBolt(t *testing.T, opts *journal.Options) journal.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "journal.db"), &bolt.Options{Journal: *cmp.Or(opts, new(journal.Options))})
	if err != nil {
		t.Fatalf("bolt.Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) { journaltest.Run(t, openBolt) }

// The hammer at a larger scale than the conformance suite runs it.
func TestHammer(t *testing.T) {
	opts := journaltest.HammerOptions{Goroutines: 64, Keys: 32, Rounds: 3}
	if testing.Short() {
		opts = journaltest.HammerOptions{Goroutines: 16, Keys: 16, Rounds: 2}
	}
	clk := &journaltest.Clock{}
	s, err := bolt.Open(filepath.Join(t.TempDir(), "journal.db"), &bolt.Options{Journal: journal.Options{Now: clk.Now}, MaxBatchDelay: time.Duration(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	journaltest.Hammer(t, s, clk, opts)
}
