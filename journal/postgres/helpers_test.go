package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// urlEnv names the variable that points the tests at a PostgreSQL server.
const urlEnv = "AGENTONCE_PG_URL"

// pgURL returns the test server's URL, or skips the test when none is set.
// With the variable set, an unreachable server fails the tests.
func pgURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		t.Skip(urlEnv + " is not set: the PostgreSQL journal tests need a server " +
			"(e.g. postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable; .ci/run starts one)")
	}
	return u
}

// newSchema returns a schema name of the test's own, dropped when the test
// ends, so tests never see each other's rows.
func newSchema(t testing.TB) string {
	t.Helper()
	url := pgURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentonce_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// openStore opens a store in a fresh schema, closed when the test ends.
func openStore(t testing.TB, jo *journal.Options) *postgres.Store {
	t.Helper()
	return openIn(t, newSchema(t), jo)
}

// openIn opens a store in schema, closed when the test ends.
func openIn(t testing.TB, schema string, jo *journal.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgURL(t), &postgres.Options{Journal: jo, Schema: schema})
	if err != nil {
		t.Fatalf("Open(schema %s) = %v", schema, err)
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
