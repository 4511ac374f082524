package postgres_test

import (
	"cmp"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// pgURL returns the test server's URL, or skips the test when none is set.
func pgURL(t testing.TB) string { return pgtest.URL(t) }

// newSchema returns a schema name of the test's own, dropped when the test
// ends.
func newSchema(t testing.TB) string { return pgtest.Schema(t, "agentonce_test_") }

// openStore opens a store in a fresh schema, closed when the test ends.
func openStore(t testing.TB, jo *journal.Options) *postgres.Store {
	t.Helper()
	return openIn(t, newSchema(t), jo)
}

// openIn opens a store in schema, closed when the test ends. The store
// ignores jo.Now (the server's clock decides), so a test clock given there
// becomes its Options.TestClock instead.
func openIn(t testing.TB, schema string, jo *journal.Options) *postgres.Store {
	t.Helper()
	opts := &postgres.Options{Journal: *cmp.Or(jo, new(journal.Options)), Schema: schema}
	if jo != nil {
		opts.TestClock = jo.Now
	}
	return openWith(t, opts)
}

// openClient opens a store in schema as a client process would, its
// journal options as given: the server's clock decides.
func openClient(t testing.TB, schema string, jo *journal.Options) *postgres.Store {
	t.Helper()
	return openWith(t, &postgres.Options{Journal: *cmp.Or(jo, new(journal.Options)), Schema: schema})
}

// openAtVersion opens a store that creates or migrates its schema only up
// to version (postgres.OpenAtVersion), closed when the test ends.
func openAtVersion(t testing.TB, opts postgres.Options, version int) *postgres.Store {
	t.Helper()
	s, err := postgres.OpenAtVersion(context.Background(), pgURL(t), opts, version)
	if err != nil {
		t.Fatalf("OpenAtVersion(schema %s, %d) = %v", opts.Schema, version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openWith(t testing.TB, opts *postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgURL(t), opts)
	if err != nil {
		t.Fatalf("Open(schema %s) = %v", opts.Schema, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// clock is a settable store clock (Options.Now), safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
