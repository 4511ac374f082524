package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
)

// pgJournal returns a postgres:// journal location in a schema of the
// test's own (dropped at the end), or skips without AGENTONCE_PG_URL.
func pgJournal(t *testing.T) string {
	t.Helper()
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, "agentctl_test_")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// schemaExists asks the server whether the test's schema was created.
func schemaExists(t *testing.T, loc string) bool {
	t.Helper()
	u, _ := url.Parse(loc)
	schema := u.Query().Get("schema")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AGENTONCE_PG_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestPostgresMove moves a journal bbolt → PostgreSQL → bbolt with export
// and import: every export is identical, and the commands read the
// PostgreSQL journal as they read the file.
func TestPostgresMove(t *testing.T) {
	pg := pgJournal(t)
	fx := buildFixture(t)
	first := exportOf(t, fx.path)

	// A schema without a journal is "not found" for every command and is
	// not created by inspecting it.
	for _, c := range [][]string{{"ls"}, {"stats"}, {"gc"}, {"resolve", fx.keys[fxEmail].String(), "--succeeded"}, {"import", writeFile(t, first)}} {
		r := agentctl(t, false, append(c, "--journal", pg)...)
		if r.code != exitNoJournal {
			t.Errorf("%v on an empty schema = %d, %q; want %d", c, r.code, r.stderr, exitNoJournal)
		}
	}
	if schemaExists(t, pg) {
		t.Fatalf("a command created the schema")
	}

	r := agentctl(t, false, "import", "--create", "--journal", pg, writeFile(t, first))
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("imported %d records", fixtureSize)) {
		t.Fatalf("import into PostgreSQL = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if got := exportOf(t, pg); got != first {
		t.Errorf("export from PostgreSQL differs:\n--- bbolt ---\n%s--- postgres ---\n%s", first, got)
	}
	back := filepath.Join(t.TempDir(), "back.db")
	if r := agentctl(t, false, "import", "--create", "--journal", back, writeFile(t, exportOf(t, pg))); r.code != 0 {
		t.Fatalf("import back = %d, %s", r.code, r.stderr)
	}
	if got := exportOf(t, back); got != first {
		t.Errorf("export after bbolt → PostgreSQL → bbolt differs")
	}

	// The same answers from both stores (replay differs by one intent,
	// below).
	for _, c := range [][]string{
		{"ls"}, {"ls", "--session", "s1", "--state", "pending"}, {"show", fx.keys[fxLookup].String()},
		{"replay", "--session", "s2", "--json"}, {"derive", fx.keys[fxCharge].String()}, {"gc", "--dry-run"},
	} {
		a := agentctl(t, false, append(c, "--journal", fx.path)...)
		b := agentctl(t, false, append(c, "--journal", pg)...)
		if a != b {
			t.Errorf("%v: bbolt and PostgreSQL differ:\n%+v\n%+v", c, a, b)
		}
	}
	// Many processes share a PostgreSQL journal: a live lease is a live
	// owner's. Replay waits for it; resolve refuses it without --force.
	ship := fx.keys[fxShip].String()
	r = agentctl(t, false, "replay", "--journal", pg, "--session", "s1")
	if r.code != exitReplayBlock || !strings.Contains(r.stdout, "wait\t"+ship) {
		t.Errorf("replay on PostgreSQL = %d, %q; want ship waiting", r.code, r.stdout)
	}
	if r := agentctl(t, false, "show", ship, "--journal", pg); !strings.Contains(r.stdout, "lease_expires\t2026-03-02T09:07:00Z (live)\n") {
		t.Errorf("show of a live lease on PostgreSQL = %q", r.stdout)
	}
	r = agentctl(t, false, "resolve", ship, "--journal", pg, "--succeeded")
	if r.code != exitConflict || !strings.Contains(r.stderr, "in flight: agent-2 holds its lease") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("resolve of a live lease on PostgreSQL = %d, %q", r.code, r.stderr)
	}
	if rec := getRecord(t, pg, ship); rec.State != journal.StatePending {
		t.Errorf("refused resolve changed the record to %s", rec.State)
	}
	if r := agentctl(t, false, "resolve", ship, "--journal", pg, "--succeeded", "--force"); r.code != 0 {
		t.Errorf("resolve --force on PostgreSQL = %d, %s", r.code, r.stderr)
	}

	st := agentctl(t, false, "stats", "--journal", pg, "--json")
	if st.code != 0 || !strings.Contains(st.stdout, fmt.Sprintf(`"records":%d,"expired":1,"attempts":%d`, fixtureSize, fixtureSize+1)) {
		t.Errorf("stats on PostgreSQL = %d, %s %s", st.code, st.stdout, st.stderr)
	}
	if r := agentctl(t, false, "resolve", fx.keys[fxEmail].String(), "--journal", pg, "--failed", "--reason", "bounced"); r.code != 0 {
		t.Errorf("resolve on PostgreSQL = %d, %s", r.code, r.stderr)
	}
	if r := agentctl(t, false, "compact", "--journal", pg); r.code != exitUsage {
		t.Errorf("compact on PostgreSQL = %d, %s; want %d", r.code, r.stderr, exitUsage)
	}
}

// stats on PostgreSQL counts every record, with --scan or without
// (postgres.Store.ScanStats is Stats from schema 7 on): a count changed in
// the counts table an older schema kept changes neither.
func TestPostgresStatsScan(t *testing.T) {
	pg := pgJournal(t)
	fx := buildFixture(t)
	if r := agentctl(t, false, "import", "--create", "--journal", pg, writeFile(t, exportOf(t, fx.path))); r.code != 0 {
		t.Fatalf("import into PostgreSQL = %d, %s", r.code, r.stderr)
	}
	stats := func(args ...string) statsJSON {
		t.Helper()
		r := agentctl(t, false, append([]string{"stats", "--journal", pg, "--json"}, args...)...)
		var s statsJSON
		if err := json.Unmarshal([]byte(r.stdout), &s); r.code != 0 || err != nil {
			t.Fatalf("stats %v = %d, %s, %s (%v)", args, r.code, r.stdout, r.stderr, err)
		}
		return s
	}
	counted, scanned := stats(), stats("--scan")
	if !reflect.DeepEqual(counted, scanned) || counted.Records != fixtureSize {
		t.Errorf("stats --json = %+v\nstats --json --scan = %+v; want the same, %d records", counted, scanned, fixtureSize)
	}

	u, _ := url.Parse(pg)
	counts := pgx.Identifier{u.Query().Get("schema"), "counts"}.Sanitize()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AGENTONCE_PG_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE `+counts+` SET succeeded = succeeded + 999
		WHERE (shard, tool) = (SELECT shard, tool FROM `+counts+` WHERE succeeded > 0 LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	if s := stats(); s.Records != fixtureSize || !reflect.DeepEqual(s, scanned) {
		t.Errorf("stats on a journal whose counts say 999 more = %+v; want %+v", s, scanned)
	}
	if s := stats("--scan"); s.Records != fixtureSize || !reflect.DeepEqual(s, scanned) {
		t.Errorf("stats --scan on a journal whose counts say 999 more = %+v; want %+v", s, scanned)
	}
}
