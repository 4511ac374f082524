package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the variable that points the tests at a server.
const URLEnv = "AGENTONCE_PG_URL"

// URL returns the test server's URL, or skips the test when none is set.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		tb.Skip(URLEnv + " is not set: the PostgreSQL tests need a server " +
			"(e.g. postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable; .ci/run starts one)")
	}
	return u
}

// Schema returns a fresh schema name starting with prefix, dropped with
// everything in it when the test ends, so that tests never see each
// other's rows. It skips the test when no server is set.
func Schema(tb testing.TB, prefix string) string {
	tb.Helper()
	url := URL(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}
