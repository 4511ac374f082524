package postgres_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// A journal of schema version 4, with records in every state, is migrated
// to version 5 (count_missing: one UPDATE of the counter row per write,
// the row inserted only when missing): every record reads back as it was
// and verifies, the counts still equal the rows, and the store goes on
// writing and counting, in the counter rows version 4 made and in new ones
// (a tool version 4 never wrote, and every tool after a TRUNCATE).
func TestMigrationToCountMissing(t *testing.T) {
	testMigration(t, 4, 5, false)
}

// A journal of schema version 5 is migrated to version 6 (intents awaiting
// approval): as TestMigrationToCountMissing, and then the store keeps
// intents awaiting approval, approves, rejects and runs them, and counts
// them by state.
func TestMigrationToApprovals(t *testing.T) {
	st := testMigration(t, 5, 6, true)
	if st.ByState[journal.StateAwaiting] == 0 {
		t.Errorf("Stats after writing on version 6 = %+v; want records awaiting approval", st)
	}
}

// testMigration writes a journal of schema version from, opens it at
// version to, checks it, and writes on; it returns the Stats after the
// writes on version to, before a TRUNCATE.
func testMigration(t *testing.T, from, to int, approvals bool) journal.Stats {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	sql := operatorPool(t)
	old := openAtVersion(t, postgres.Options{Schema: schema, TestClock: clk.Now}, from)
	w := &workload{s: old, sql: sql, rng: rand.New(rand.NewPCG(9, uint64(6+from))), clock: clk, owner: "old", advance: true}
	for step := range 400 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d on version %d: %v", step, from, err)
		}
	}
	agree(t, "before the migration", old)
	before := map[uuid.UUID]journal.Record{}
	states := map[journal.State]bool{}
	for r, err := range old.List(ctx, journal.Filter{}) {
		if err != nil {
			t.Fatalf("List on version %d: %v", from, err)
		}
		before[r.Key] = r
		states[r.State] = true
	}
	if len(states) < 4 {
		t.Fatalf("the version-%d journal has records in states %v; want at least four states", from, states)
	}
	old.Close()

	s := openAtVersion(t, postgres.Options{Schema: schema, TestClock: clk.Now}, to)
	var version int
	q := pgx.Identifier{schema}.Sanitize()
	if err := sql.QueryRow(ctx, `SELECT version FROM `+q+`.meta`).Scan(&version); err != nil || version != to {
		t.Fatalf("meta version after Open = %d, %v; want %d", version, err, to)
	}
	for key, want := range before {
		got, err := s.Get(ctx, key)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%s) after the migration = %+v, %v; want %+v", key, got, err, want)
		}
	}
	n, err := s.Verify(ctx, func(key uuid.UUID, err error) { t.Errorf("Verify after the migration: %s: %v", key, err) })
	if err != nil || n != len(before) {
		t.Errorf("Verify after the migration = %d, %v; want %d rows", n, err, len(before))
	}
	agree(t, "after the migration", s)

	w.s, w.approvals = s, approvals
	for step := range 300 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d on version %d: %v", step, to, err)
		}
	}
	st := agree(t, "after writing on the new version", s)
	// A tool no write before counted: its counter rows are new.
	for i := range 40 {
		rec := settled(t, s, 1000+i, `{"new":true}`)
		if rec.State != journal.StateSucceeded {
			t.Fatalf("settled record %d is %s", i, rec.State)
		}
	}
	agree(t, "after a new tool", s)
	psql(t, `TRUNCATE `+q+`.records`)
	for step := range 200 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d after TRUNCATE: %v", step, err)
		}
	}
	agree(t, "after TRUNCATE", s)
	if _, err := s.Verify(ctx, func(key uuid.UUID, err error) { t.Errorf("Verify on version %d: %s: %v", to, key, err) }); err != nil {
		t.Fatal(err)
	}
	return st
}
