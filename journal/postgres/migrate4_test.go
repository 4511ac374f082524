package postgres_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// A journal of schema version 3 (sealed and counted by triggers), with
// records in every state, is migrated to version 4 (writes that seal and
// count themselves, fewer indexes): every record reads back as it was,
// none reads as damaged, the counts still equal the rows, the store goes
// on writing and counting, and the tables have the indexes version 4
// promises.
func TestMigrationFromTriggers(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	sql := operatorPool(t)
	old := openAtVersion(t, postgres.Options{Schema: schema, TestClock: clk.Now}, 3)
	w := &workload{s: old, sql: sql, rng: rand.New(rand.NewPCG(7, 8)), clock: clk, owner: "old", advance: true}
	for step := range 400 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d on version 3: %v", step, err)
		}
	}
	before := map[uuid.UUID]journal.Record{}
	states := map[journal.State]bool{}
	for r, err := range old.List(ctx, journal.Filter{}) {
		if err != nil {
			t.Fatalf("List on version 3: %v", err)
		}
		before[r.Key] = r
		states[r.State] = true
	}
	if len(states) < 4 {
		t.Fatalf("the version-3 journal has records in states %v; want at least four states", states)
	}
	old.Close()

	s := openIn(t, schema, &journal.Options{Now: clk.Now})
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

	w.s = s
	for step := range 300 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d on version 4: %v", step, err)
		}
	}
	agree(t, "after writing on version 4", s)
	if _, err := s.Verify(ctx, func(key uuid.UUID, err error) { t.Errorf("Verify on version 4: %s: %v", key, err) }); err != nil {
		t.Fatal(err)
	}

	var indexes []string
	rows, err := sql.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'records'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(indexes)
	// Schema 7 dropped records_created_idx, which no rule reads.
	want := []string{"records_expires_idx", "records_guard_idx", "records_pkey", "records_scope_idx"}
	if !slices.Equal(indexes, want) {
		t.Errorf("indexes of records after the migrations = %v; want %v", indexes, want)
	}
}

// Complete is a heap-only update: it changes no column that an index
// names, so it writes no index entry. Counted from the server's
// statistics of the table, which the store's sessions are asked to
// publish.
func TestCompleteIsHOT(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	const n = 20
	for i := range n {
		settled(t, s, i, `{"sent":true}`)
	}
	// Each pooled session publishes its statistics when next idle.
	for _, c := range s.Pool().AcquireAllIdle(ctx) {
		if _, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
	table := pgx.Identifier{s.Schema(), "records"}.Sanitize()
	var hot, upd int64
	for range 100 {
		if err := s.Pool().QueryRow(ctx, `SELECT n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables
			WHERE relid = $1::regclass`, table).Scan(&hot, &upd); err != nil {
			t.Fatal(err)
		}
		if upd >= n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if upd < n || hot != upd {
		t.Errorf("after %d Begin+Complete: %d updates of records, %d of them HOT; want all %d HOT", n, upd, hot, n)
	}
}
