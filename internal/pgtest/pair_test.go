package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/internal/pgtest"
)

// A row committed on a synchronous pair's primary is on the standby once
// the primary is killed and the standby promoted, and a client reaches
// the new primary through the pair's URL.
func TestPairFailover(t *testing.T) {
	p := pgtest.StartPair(t, true)
	ctx := context.Background()
	exec := func(url, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connecting to %s: %v", url, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(p.URL, `CREATE TABLE t (n int); INSERT INTO t VALUES (1)`)
	p.KillPrimary()
	p.Promote()
	exec(p.URL, `INSERT INTO t VALUES (2)`)
	conn, err := pgx.Connect(ctx, p.StandbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT sum(n) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("sum of the rows on the promoted standby = %d; want 3 (both rows)", n)
	}
}
