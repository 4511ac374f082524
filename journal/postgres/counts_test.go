package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

// agree checks Stats, which reads the counts table, against ScanStats,
// which counts every row, and that the counts add up. It returns Stats.
func agree(t *testing.T, stage string, s *postgres.Store) journal.Stats {
	t.Helper()
	ctx := context.Background()
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("%s: Stats: %v", stage, err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil {
		t.Fatalf("%s: ScanStats: %v", stage, err)
	}
	if !reflect.DeepEqual(st, scan) {
		t.Fatalf("%s:\nStats     = %+v\nScanStats = %+v; want them equal", stage, st, scan)
	}
	if err := addsUp(st); err != nil {
		t.Fatalf("%s: %v", stage, err)
	}
	return st
}

// addsUp checks that the counts of one Stats agree with each other: by
// state and by tool they sum to Records, and no count is zero or negative
// (a zero is left out, as the other stores leave it out).
func addsUp(st journal.Stats) error {
	states, tools := 0, 0
	for state, n := range st.ByState {
		if n <= 0 {
			return fmt.Errorf("Stats.ByState[%s] = %d", state, n)
		}
		states += n
	}
	for tool, n := range st.ByTool {
		if n <= 0 {
			return fmt.Errorf("Stats.ByTool[%q] = %d", tool, n)
		}
		tools += n
	}
	if states != st.Records || tools != st.Records || st.Attempts < 0 {
		return fmt.Errorf("Stats = %+v: by state %d, by tool %d; want both %d", st, states, tools, st.Records)
	}
	return nil
}

// workload makes random calls through a store, on a pool of intents that
// every workload shares: new intents (durable and not, each guard scope),
// replays, mismatches, takeovers and retakes, attempts, renewals, every
// outcome, resolutions, GC, imports, and deletes by an operator's SQL.
type workload struct {
	s     *postgres.Store
	sql   *pgxpool.Pool // an operator's sessions: no agentonce settings
	rng   *rand.Rand
	clock *clock
	owner string
	// advance moves the clock itself; false when another goroutine does.
	advance bool
	// approvals makes some intents await approval, and approves or
	// rejects them (schema 6 on).
	approvals bool
}

var (
	workTools   = []string{"pay", "mail", "ship", "search", "tool ü"}
	workOutcome = []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown}
)

const workIntents = 64

// intentKey is the key of intent i of the shared pool.
func intentKey(i int) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "counts-intent-%d", i))
}

// step makes one random call and returns an error only when it failed in a
// way the call's contract does not allow.
func (w *workload) step(ctx context.Context) error {
	r := w.rng
	i := r.IntN(workIntents)
	key := intentKey(i)
	switch op := r.IntN(100); {
	case op < 40:
		input := `{"n":` + fmt.Sprint(i) + `}`
		if r.IntN(10) == 0 {
			input = `{"n":"altered"}` // a mismatch if the record exists
		}
		req := journal.BeginRequest{
			Key:         key,
			Intent:      keyderive.Intent{Tenant: "acme", Session: fmt.Sprint("s", i%4), Turn: fmt.Sprint(i % 3), Tool: workTools[i%len(workTools)]},
			Fingerprint: keyderive.FingerprintOf([]byte(input)),
			Input:       []byte(input),
			Owner:       w.owner,
			AttemptID:   "a1",
			LeaseTTL:    time.Duration(1+r.IntN(10)) * time.Minute,
			RecordTTL:   time.Duration(1+r.IntN(48)) * time.Hour,
			Durable:     r.IntN(2) == 0,
			Guard:       journal.GuardScope(r.IntN(3)),
		}
		if r.IntN(4) == 0 {
			req.Settle = 30 * time.Second
		}
		if r.IntN(8) == 0 {
			req.Retake = func(*journal.Record) bool { return true }
		}
		if w.approvals && r.IntN(4) == 0 {
			req.Approvals, req.ApprovalTTL = 1+r.IntN(2), time.Duration(1+r.IntN(6))*time.Hour
		}
		res, err := w.s.Begin(ctx, req)
		if err != nil {
			return fmt.Errorf("Begin(%s): %w", key, err)
		}
		if (res.Outcome == journal.Started || res.Outcome == journal.TakenOver) && r.IntN(2) == 0 {
			return w.complete(ctx, key, res.Token)
		}
		return nil
	case op < 75:
		rec, err := w.s.Get(ctx, key)
		if errors.Is(err, journal.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Get(%s): %w", key, err)
		}
		tok := rec.Lease.Token
		switch {
		case op < 60 && rec.State == journal.StateAwaiting:
			return w.decide(ctx, rec)
		case op < 50 && rec.State == journal.StatePending:
			return w.complete(ctx, key, tok)
		case op < 58 && rec.State == journal.StatePending:
			err = w.s.StartAttempt(ctx, journal.AttemptRequest{Key: key, Token: tok, ID: fmt.Sprint("a", len(rec.Attempts)+1),
				PrevClass: "timeout", LeaseTTL: time.Minute, Durable: r.IntN(2) == 0})
		case op < 62 && rec.State == journal.StatePending:
			_, err = w.s.Renew(ctx, journal.RenewRequest{Key: key, Token: tok, LeaseTTL: time.Minute})
		case op < 68:
			state := journal.StateSucceeded
			if r.IntN(2) == 0 {
				state = journal.StateFailed
			}
			_, err = w.s.Resolve(ctx, key, journal.Resolution{State: state, Reason: "checked", By: "op"})
		case op < 72:
			// The record as it is (identical: nothing to do), or changed
			// (refused). A pending record renewed or given an attempt after
			// its TTL holds a lease that outlives it, which Import refuses
			// as a record the state machine would not make (journal's
			// validRecord, against its applyRenew and applyAttempt, which
			// do not cap the lease): such a one is not offered. Any other
			// record Import must take: its times are in order, though the
			// writers race on it with one test clock read before their
			// statements wait for its row lock.
			if rec.State == journal.StatePending && rec.Lease.Expires.After(rec.Expires) {
				break
			}
			if err := machine.ValidateImport(&rec); err != nil {
				return fmt.Errorf("on %s (%s): a record the store wrote: %w", key, rec.State, err)
			}
			if r.IntN(2) == 0 {
				rec.ErrorMessage += "!"
			}
			err = w.s.Import(ctx, rec)
		default:
			_, err = w.sql.Exec(ctx, `DELETE FROM `+pgx.Identifier{w.s.Schema(), "records"}.Sanitize()+` WHERE key = $1`, key)
		}
		if err != nil && !errors.Is(err, journal.ErrFenced) && !errors.Is(err, journal.ErrNotFound) &&
			!errors.Is(err, journal.ErrNotResolvable) && !errors.Is(err, journal.ErrExists) {
			return fmt.Errorf("on %s (%s): %w", key, rec.State, err)
		}
		return nil
	case op < 85:
		return w.importNew(ctx)
	case op < 90:
		_, err := w.s.GC(ctx, journal.GCOptions{DryRun: r.IntN(3) == 0})
		if err != nil {
			return fmt.Errorf("GC: %w", err)
		}
		return nil
	default:
		if w.advance {
			w.clock.Advance(time.Duration(r.IntN(180)) * time.Minute)
		}
		return nil
	}
}

// complete records one of the four outcomes of a record the workload owns.
func (w *workload) complete(ctx context.Context, key uuid.UUID, token uint64) error {
	state := workOutcome[w.rng.IntN(len(workOutcome))]
	c := journal.Completion{Key: key, Token: token, State: state}
	if state == journal.StateSucceeded {
		c.Output = []byte(`{"ok":true}`)
	} else {
		c.ErrorClass, c.ErrorMessage = "permanent", "no"
	}
	_, err := w.s.Complete(ctx, c)
	if err != nil && !errors.Is(err, journal.ErrFenced) && !errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("Complete(%s): %w", key, err)
	}
	return nil
}

// decide approves (as one of three approvers, now and then of another
// input) or rejects an intent awaiting approval.
func (w *workload) decide(ctx context.Context, rec journal.Record) error {
	res := journal.Resolution{State: journal.StatePending, By: fmt.Sprint("approver ", w.rng.IntN(3)), Fingerprint: rec.Fingerprint}
	switch w.rng.IntN(8) {
	case 0:
		res.State, res.Reason = journal.StateSuppressed, "no"
	case 1:
		res.Fingerprint = keyderive.FingerprintOf([]byte(`{"n":"other"}`))
	}
	_, err := w.s.Resolve(ctx, rec.Key, res)
	if err != nil && !errors.Is(err, journal.ErrInvalid) && !errors.Is(err, journal.ErrNotResolvable) &&
		!errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("Resolve(%s, %s by %s): %w", rec.Key, res.State, res.By, err)
	}
	return nil
}

// importNew imports a record of its own key, in any state, with one to
// three attempts, created up to a day ago: a record the state machine could
// have produced (Import refuses any other).
func (w *workload) importNew(ctx context.Context) error {
	r := w.rng
	now := w.clock.Now()
	created := now.Add(-time.Duration(r.IntN(24*60)) * time.Minute)
	rec := journal.Record{
		Key:         uuid.New(),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "imported", Turn: "1", Tool: workTools[r.IntN(len(workTools))]},
		Fingerprint: keyderive.FingerprintOf([]byte(`{}`)),
		State:       journal.State(1 + r.IntN(5)),
		Lease:       journal.Lease{Owner: "elsewhere", Token: 1, Expires: created.Add(time.Second)},
		Created:     created,
		Updated:     created.Add(time.Second),
		Expires:     created.Add(time.Duration(1+r.IntN(48)) * time.Hour),
	}
	for a := range 1 + r.IntN(3) {
		rec.Attempts = append(rec.Attempts, journal.Attempt{ID: fmt.Sprint("a", a+1), Start: created, End: created.Add(time.Second)})
	}
	switch rec.State {
	case journal.StatePending:
		rec.Attempts[len(rec.Attempts)-1].End = time.Time{}
		rec.Lease.Expires = created.Add(time.Minute)
	case journal.StateSucceeded:
	default:
		rec.ErrorClass = "terminal"
	}
	if err := w.s.Import(ctx, rec); err != nil {
		return fmt.Errorf("Import(%s): %w", rec.Key, err)
	}
	return nil
}

// operatorPool is a pool of plain sessions, as psql's: neither the seal
// nor row-by-row counting is on. It is closed when the test ends.
func operatorPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Random calls through the store keep the counts that Stats reads equal to
// what the rows say, at every checkpoint.
func TestCountsFollowRandomCalls(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	w := &workload{s: s, sql: operatorPool(t), rng: rand.New(rand.NewPCG(3, 5)), clock: clk, owner: "o", advance: true, approvals: true}
	for step := range 1200 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%25 == 24 {
			agree(t, fmt.Sprint("step ", step), s)
		}
	}
	st := agree(t, "the end", s)
	if len(st.ByState) != 6 || len(st.ByTool) != len(workTools) || st.Attempts <= st.Records {
		t.Errorf("Stats at the end = %+v; want every state and tool, and more attempts than records", st)
	}
}

// A journal of schema version 2, with rows in it, is migrated by Open: the
// counts of the rows already stored are filled in, and a process of the
// older release still writing while the migration runs loses no count.
func TestMigrationCountsExistingRows(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	sql := operatorPool(t)
	old := openAtVersion(t, postgres.Options{Schema: schema, TestClock: clk.Now}, 2)
	w := &workload{s: old, sql: sql, rng: rand.New(rand.NewPCG(1, 2)), clock: clk, owner: "old"}
	for step := range 400 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d on version 2: %v", step, err)
		}
	}
	var counts *string
	if err := sql.QueryRow(ctx, `SELECT to_regclass($1)::text`, q+".counts").Scan(&counts); err != nil || counts != nil {
		t.Fatalf("a version-2 journal has a counts table (%v, %v)", counts, err)
	}

	// The old process keeps writing while the new one migrates.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		w := &workload{s: old, sql: sql, rng: rand.New(rand.NewPCG(3, 4)), clock: clk, owner: "old"}
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := w.step(ctx); err != nil {
				t.Errorf("the old process during the migration: %v", err)
				return
			}
		}
	})
	time.Sleep(50 * time.Millisecond)
	s := openIn(t, schema, &journal.Options{Now: clk.Now})
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()

	var version int
	if err := sql.QueryRow(ctx, `SELECT version FROM `+q+`.meta`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("meta version after Open = %d, %v; want %d", version, err, postgres.SchemaVersion)
	}
	if st := agree(t, "after the migration", s); st.Records < 50 {
		t.Fatalf("Stats after the migration = %+v; want the rows of the old journal", st)
	}
}

// Writers on several stores sharing the database, on overlapping intents,
// with GC and an operator's deletes among them, leave the counts equal to
// the rows; no write fails on the counters (a deadlock, a serialization
// failure); and every Stats read meanwhile is a consistent snapshot.
func TestCountsConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	sql := operatorPool(t)
	stores := make([]*postgres.Store, 4)
	for i := range stores {
		stores[i] = openWith(t, &postgres.Options{Schema: schema, TestClock: clk.Now, MaxConns: 8})
	}
	const writers, steps = 32, 40
	done := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { // the clock moves on: leases and TTLs expire
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				clk.Advance(7 * time.Minute)
			}
		}
	})
	bg.Go(func() { // Stats meanwhile: each one a snapshot that adds up
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			st, err := stores[0].Stats(ctx)
			if err == nil {
				err = addsUp(st)
			}
			if err != nil {
				t.Errorf("Stats while writing: %v", err)
				return
			}
		}
	})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			w := &workload{s: stores[g%len(stores)], sql: sql, rng: rand.New(rand.NewPCG(uint64(g), 9)), clock: clk, owner: fmt.Sprint("w", g)}
			for step := range steps {
				if err := w.step(ctx); err != nil {
					t.Errorf("writer %d, step %d: %v", g, step, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	bg.Wait()
	for i, s := range stores {
		agree(t, fmt.Sprint("store ", i, " at the end"), s)
	}
}

// Changes an operator makes in SQL, row by row or in bulk, in a
// transaction or not, rolled back or not, keep the counts right, and so do
// those of a session that counts row by row (agentonce.count_rows on, as
// the store's sessions), which moves rows between counter rows.
func TestCountsFollowSQL(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	w := &workload{s: s, sql: operatorPool(t), rng: rand.New(rand.NewPCG(5, 6)), clock: clk, owner: "o", advance: true}
	for step := range 300 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	before := agree(t, "before the SQL", s)
	r := pgx.Identifier{s.Schema(), "records"}.Sanitize()
	// copyRows is an INSERT of the rows matching where, each with a new
	// key (the old one hashed with salt) and the given tool.
	copyRows := func(salt, tool, where string) string {
		return `INSERT INTO ` + r + ` (` + postgres.RecordColumns + `) SELECT ` + postgres.RecordColumns + `
			FROM (SELECT (jsonb_populate_record(r, jsonb_build_object(
			'key', md5(r.key::text || '` + salt + `')::uuid, 'tool', ` + tool + `))).* FROM ` + r + ` r WHERE ` + where + `) p`
	}
	one := `key = (SELECT key FROM ` + r + ` ORDER BY key LIMIT 1)`
	for _, tc := range []struct {
		name  string
		stmts []string
	}{
		{"insert a row", []string{copyRows("a", "r.tool", one)}},
		{"insert every row again", []string{copyRows("b", "'bulk ' || r.tool", "true")}},
		{"update a state", []string{`UPDATE ` + r + ` SET state = 5 WHERE ` + one}},
		{"update a state to awaiting", []string{`UPDATE ` + r + ` SET state = 6 WHERE ` + one}},
		{"update many states", []string{`UPDATE ` + r + ` SET state = CASE state WHEN 2 THEN 3 WHEN 3 THEN 1 ELSE state END`}},
		{"update tools", []string{`UPDATE ` + r + ` SET tool = 'renamed' WHERE tool LIKE 'bulk p%'`}},
		{"update keys", []string{`UPDATE ` + r + ` SET key = md5(key::text || 'k')::uuid WHERE tool = 'renamed'`}},
		{"append an attempt", []string{`UPDATE ` + r + ` SET attempts = attempts || '[{"id":"op"}]' WHERE state = 1`}},
		{"drop the attempts", []string{`UPDATE ` + r + ` SET attempts = '[]' WHERE tool = 'bulk mail'`}},
		{"move leases (no count changes)", []string{`UPDATE ` + r + ` SET lease_expires_ns = lease_expires_ns + 1`}},
		{"delete a row", []string{`DELETE FROM ` + r + ` WHERE ` + one}},
		{"delete many", []string{`DELETE FROM ` + r + ` WHERE tool = 'bulk ship'`}},
		{"rolled back", []string{`BEGIN`, copyRows("c", "'x'", "true"), `UPDATE ` + r + ` SET state = 4`,
			`DELETE FROM ` + r + ` WHERE state = 4`, `ROLLBACK`}},
		{"savepoints", []string{`BEGIN`, copyRows("d", "'kept'", "state = 2"), `SAVEPOINT a`, `DELETE FROM ` + r,
			`ROLLBACK TO a`, `UPDATE ` + r + ` SET state = 2 WHERE tool = 'kept'`, `COMMIT`}},
		{"row by row: insert, update state, tool, key and attempts, delete", []string{`SET agentonce.count_rows = on`,
			copyRows("e", "'rows'", "tool LIKE 'bulk%'"),
			`UPDATE ` + r + ` SET state = 1 + (state % 6) WHERE tool = 'rows'`,
			`UPDATE ` + r + ` SET tool = 'rows ' || (get_byte(uuid_send(key), 0) % 3) WHERE tool = 'rows'`,
			`UPDATE ` + r + ` SET key = md5(key::text || 'm')::uuid, attempts = '[{"id":"m"}]' WHERE tool = 'rows 1'`,
			`UPDATE ` + r + ` SET key = md5(key::text || 'n')::uuid, tool = 'rows 0', state = 3 WHERE tool = 'rows 2'`,
			`DELETE FROM ` + r + ` WHERE tool = 'rows 1' AND state = 2`}},
	} {
		psql(t, append([]string{`SET agentonce.seal = on`}, tc.stmts...)...)
		agree(t, tc.name, s)
	}
	if st := agree(t, "after the SQL", s); st.Records <= before.Records {
		t.Errorf("Stats after the SQL = %+v; want more records than the %d before", st, before.Records)
	}
	psql(t, `TRUNCATE `+r)
	if st := agree(t, "truncate", s); st.Records != 0 || st.Attempts != 0 || len(st.ByState) != 0 || len(st.ByTool) != 0 {
		t.Errorf("Stats after TRUNCATE = %+v; want nothing", st)
	}
	// The store goes on counting after the operator's SQL.
	for step := range 100 {
		if err := w.step(ctx); err != nil {
			t.Fatalf("step %d after the SQL: %v", step, err)
		}
	}
	agree(t, "the store after the SQL", s)
}

// Stats reads the counts, not the rows: a count changed in the counts table
// shows in Stats, and ScanStats still tells the truth.
func TestStatsReadsTheCounts(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	for i := range 3 {
		settled(t, s, i, `{"sent":true}`)
	}
	agree(t, "three settled", s)
	psql(t, `UPDATE `+pgx.Identifier{s.Schema(), "counts"}.Sanitize()+` SET succeeded = succeeded + 1000, attempts = attempts + 1000
		WHERE (shard, tool) = (SELECT shard, tool FROM `+pgx.Identifier{s.Schema(), "counts"}.Sanitize()+` WHERE succeeded > 0 LIMIT 1)`)
	st, err := s.Stats(ctx)
	if err != nil || st.Records != 1003 || st.ByState[journal.StateSucceeded] != 1003 || st.ByTool["charge"] != 1003 || st.Attempts != 1003 {
		t.Errorf("Stats with 1000 added to a counter row = %+v, %v; want 1003 records and attempts, all succeeded charges", st, err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil || scan.Records != 3 || scan.ByState[journal.StateSucceeded] != 3 || scan.Attempts != 3 {
		t.Errorf("ScanStats with 1000 added to a counter row = %+v, %v; want the 3 records", scan, err)
	}
}
