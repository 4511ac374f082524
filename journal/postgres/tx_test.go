package postgres_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// effectsTable creates the table a tool's side effect writes to, in the
// store's schema, and returns its quoted name.
func effectsTable(t *testing.T, s *postgres.Store) string {
	t.Helper()
	name := pgx.Identifier{s.Schema(), "effects"}.Sanitize()
	if _, err := s.Pool().Exec(context.Background(), `CREATE TABLE `+name+` (id serial PRIMARY KEY, key uuid NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return name
}

func countEffects(t *testing.T, s *postgres.Store, table string, key uuid.UUID) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompleteInTx(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	effects := effectsTable(t, s)
	insert := func(key uuid.UUID) func(context.Context, pgx.Tx) ([]byte, error) {
		return func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, err := tx.Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, key)
			return []byte(`{"charged":true}`), err
		}
	}

	req := request(1, `{}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// A failing effect rolls back with the journal: nothing recorded.
	boom := errors.New("card declined")
	_, err = s.CompleteInTx(ctx, req.Key, res.Token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if _, err := insert(req.Key)(ctx, tx); err != nil {
			return nil, err
		}
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("CompleteInTx(failing effect) = %v; want the effect's error", err)
	}
	if n := countEffects(t, s, effects, req.Key); n != 0 {
		t.Fatalf("effects after a failed effect = %d; want 0 (rolled back)", n)
	}
	if r, _ := s.Get(ctx, req.Key); r.State != journal.StatePending {
		t.Fatalf("record after a failed effect = %s; want pending", r.State)
	}

	// A stale token never runs the effect.
	ran := false
	_, err = s.CompleteInTx(ctx, req.Key, res.Token+1, func(context.Context, pgx.Tx) ([]byte, error) { ran = true; return nil, nil })
	if !errors.Is(err, journal.ErrFenced) || ran {
		t.Fatalf("CompleteInTx(stale token) = %v, effect ran %v; want ErrFenced, not run", err, ran)
	}
	_, err = s.CompleteInTx(ctx, uuid.New(), 1, func(context.Context, pgx.Tx) ([]byte, error) { ran = true; return nil, nil })
	if !errors.Is(err, journal.ErrNotFound) || ran {
		t.Fatalf("CompleteInTx(no record) = %v, effect ran %v; want ErrNotFound, not run", err, ran)
	}

	rec, err := s.CompleteInTx(ctx, req.Key, res.Token, insert(req.Key))
	if err != nil {
		t.Fatalf("CompleteInTx = %v", err)
	}
	if rec.State != journal.StateSucceeded || string(rec.Output) != `{"charged":true}` || rec.Attempts[0].End.IsZero() {
		t.Fatalf("CompleteInTx = %+v; want succeeded with the effect's output, attempt closed", rec)
	}
	if n := countEffects(t, s, effects, req.Key); n != 1 {
		t.Fatalf("effects = %d; want 1", n)
	}
	// Done: a second completion is fenced and runs nothing.
	_, err = s.CompleteInTx(ctx, req.Key, res.Token, insert(req.Key))
	if !errors.Is(err, journal.ErrFenced) || countEffects(t, s, effects, req.Key) != 1 {
		t.Fatalf("second CompleteInTx = %v; want ErrFenced and still one effect", err)
	}
}

// waitForBlocked returns the pid of the backend that waits on a lock while
// running a query that mentions match.
func waitForBlocked(t *testing.T, s *postgres.Store, query string, args ...any) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var pid int
		err := s.Pool().QueryRow(context.Background(), query, args...).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no backend blocked on %q", query)
	return 0
}

// TestCompleteConnectionLost blocks a Complete on the record's row lock,
// then loses its connection: the store cannot know whether the UPDATE
// committed, so it says so rather than guess.
func TestCompleteConnectionLost(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	table := pgx.Identifier{s.Schema()}.Sanitize() + ".records"
	blocked := `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE '||$1::text||'%'`

	for i, how := range []string{"terminate", "cancel"} {
		t.Run(how, func(t *testing.T) {
			req := request(i, `{}`)
			res, err := s.Begin(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			blocker, err := s.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Rollback(ctx)
			if _, err := blocker.Exec(ctx, `SELECT 1 FROM `+table+` WHERE key = $1 FOR UPDATE`, req.Key); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.Complete(cctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded})
				done <- err
			}()
			pid := waitForBlocked(t, s, blocked, table)
			if how == "terminate" {
				if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
					t.Fatal(err)
				}
			} else {
				cancel()
			}
			err = <-done
			if !errors.Is(err, postgres.ErrOutcomeUncertain) {
				t.Fatalf("Complete with its connection lost (%s) = %v; want ErrOutcomeUncertain", how, err)
			}
			if how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Errorf("Complete cancelled = %v; want it to wrap context.Canceled", err)
			}
			if err := blocker.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := s.Get(ctx, req.Key)
			if err != nil {
				t.Fatal(err)
			}
			if how == "terminate" {
				// The backend died waiting: nothing committed, the record is
				// still the owner's, and completing again works.
				if r.State != journal.StatePending || r.Lease.Token != res.Token {
					t.Fatalf("Get after the lost Complete = %s token %d; want pending token %d", r.State, r.Lease.Token, res.Token)
				}
				if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
					t.Fatalf("Complete after reconnecting = %v", err)
				}
				return
			}
			// The client gave up, but the server may still run the UPDATE
			// it had received once the lock is free, and commit it: exactly
			// why the error cannot be a definite failure. Wait for the
			// backend to finish, then look.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				var n int
				if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'`, pid).Scan(&n); err != nil || n == 0 {
					break
				}
			}
			if r, err = s.Get(ctx, req.Key); err != nil {
				t.Fatal(err)
			}
			if r.State != journal.StatePending && r.State != journal.StateSucceeded {
				t.Fatalf("Get after the cancelled Complete = %s; want pending or succeeded", r.State)
			}
			t.Logf("the cancelled Complete %s", map[bool]string{true: "committed after all", false: "did not commit"}[r.State == journal.StateSucceeded])
		})
	}
}

// TestCompleteInTxConnectionLostAtCommit kills the backend while COMMIT
// runs (a deferred trigger holds it there): the caller gets
// ErrOutcomeUncertain, and since effect and outcome commit together, Get
// tells the truth afterwards.
func TestCompleteInTxConnectionLostAtCommit(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	effects := effectsTable(t, s)
	fn := pgx.Identifier{s.Schema(), "wait_at_commit"}.Sanitize()
	lockKey := rand.Int64N(1 << 30)
	for _, stmt := range []string{
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_advisory_xact_lock(` + itoa(lockKey) + `); RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT ON ` + effects + `
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	} {
		if _, err := s.Pool().Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		t.Fatal(err)
	}

	req := request(1, `{}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.CompleteInTx(ctx, req.Key, res.Token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, err := tx.Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, req.Key)
			return nil, err
		})
		done <- err
	}()
	pid := waitForBlocked(t, s, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, lockKey)
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, postgres.ErrOutcomeUncertain) {
		t.Fatalf("CompleteInTx with its backend killed in COMMIT = %v; want ErrOutcomeUncertain", err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockKey); err != nil {
		t.Fatal(err)
	}
	// Neither committed: no effect, record pending under the same owner.
	if n := countEffects(t, s, effects, req.Key); n != 0 {
		t.Fatalf("effects after the lost commit = %d; want 0", n)
	}
	if r, _ := s.Get(ctx, req.Key); r.State != journal.StatePending || r.Lease.Token != res.Token {
		t.Fatalf("record after the lost commit = %s token %d; want pending token %d", r.State, r.Lease.Token, res.Token)
	}
	// The retry runs the effect once.
	if _, err := s.CompleteInTx(ctx, req.Key, res.Token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		_, err := tx.Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, req.Key)
		return nil, err
	}); err != nil {
		t.Fatalf("CompleteInTx retry = %v", err)
	}
	if n := countEffects(t, s, effects, req.Key); n != 1 {
		t.Fatalf("effects after the retry = %d; want 1", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
