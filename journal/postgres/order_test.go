package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
	"github.com/agentonce/agentonce/journal/postgres"
)

// holder is a transaction of its own, outside the store, that holds a
// record's row lock, as a concurrent writer of the record does.
type holder struct {
	t    *testing.T
	conn *pgx.Conn
	tx   pgx.Tx
	pid  int32
}

// lockRow locks the row of key in schema in a new transaction.
func lockRow(t *testing.T, schema string, key any) *holder {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	h := &holder{t: t, conn: conn}
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&h.pid); err != nil {
		t.Fatal(err)
	}
	if h.tx, err = conn.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema, "records"}.Sanitize()+
		` WHERE key = $1 FOR UPDATE`, key); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitBlocked returns once another session waits for the holder's lock.
func (h *holder) waitBlocked() {
	h.t.Helper()
	ctx := context.Background()
	for {
		var n int
		if err := h.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1::integer = ANY (pg_blocking_pids(pid))`, h.pid).Scan(&n); err != nil {
			h.t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriteAfterALockWaitKeepsTimesInOrder: a write that waited for the
// record's row lock while another writer changed the record writes times
// no earlier than that change, by the server's clock and by the tests'
// clock alike. The other writer here is the owner's next attempt, made in
// the lock holder's transaction as the store's StartAttempt makes it (and
// sealed as an operator's edit is), after the waiting write read the
// clock: a record holding the waiting write's older instant would be one
// Import refuses (an attempt ending before it starts, a change before the
// last), and a renewal from it a lease shorter than asked from the change
// it follows.
func TestWriteAfterALockWaitKeepsTimesInOrder(t *testing.T) {
	ctx := context.Background()
	type write func(s *postgres.Store, req journal.BeginRequest, token uint64) (renewed time.Time, err error)
	writes := []struct {
		name string
		do   write
	}{
		{"start attempt", func(s *postgres.Store, req journal.BeginRequest, token uint64) (time.Time, error) {
			return time.Time{}, s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: token, ID: "attempt-3",
				PrevClass: "timeout", LeaseTTL: time.Minute, Durable: true})
		}},
		{"complete", func(s *postgres.Store, req journal.BeginRequest, token uint64) (time.Time, error) {
			_, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: token, State: journal.StateSucceeded,
				Output: []byte(`{"ok":true}`)})
			return time.Time{}, err
		}},
		{"renew", func(s *postgres.Store, req journal.BeginRequest, token uint64) (time.Time, error) {
			return s.Renew(ctx, journal.RenewRequest{Key: req.Key, Token: token, LeaseTTL: time.Minute})
		}},
		{"resolve", func(s *postgres.Store, req journal.BeginRequest, token uint64) (time.Time, error) {
			_, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StateFailed, Reason: "checked", By: "op"})
			return time.Time{}, err
		}},
	}
	for _, clocked := range []bool{false, true} {
		for i, w := range writes {
			name := w.name + " by the server's clock"
			if clocked {
				name = w.name + " by the test clock"
			}
			t.Run(name, func(t *testing.T) {
				schema := newSchema(t)
				opts := &postgres.Options{Schema: schema}
				var clk *clock
				if clocked {
					clk = newClock()
					opts.TestClock = clk.Now
				}
				s := openWith(t, opts)
				req := request(100+i, `{}`)
				res, err := s.Begin(ctx, req)
				if err != nil || res.Outcome != journal.Started {
					t.Fatalf("Begin = %v, %v; want Started", outcomeName(res.Outcome), err)
				}
				if clocked {
					clk.Advance(time.Second) // the instant the waiting write reads
				}

				h := lockRow(t, schema, req.Key)
				done := make(chan error, 1)
				var renewed time.Time
				go func() {
					var err error
					renewed, err = w.do(s, req, res.Token)
					done <- err
				}()
				h.waitBlocked()

				// The owner's next attempt, later than the waiting write's
				// clock, committed first.
				var later *int64
				if clocked {
					clk.Advance(time.Second)
					n := clk.Now().UnixNano()
					later = &n
				} else if _, err := h.tx.Exec(ctx, `SELECT pg_sleep(0.002)`); err != nil {
					t.Fatal(err)
				}
				if _, err := h.tx.Exec(ctx, `SET LOCAL agentonce.seal = on`); err != nil {
					t.Fatal(err)
				}
				var changed int64
				if err := h.tx.QueryRow(ctx, `UPDATE `+pgx.Identifier{schema, "records"}.Sanitize()+` r
					SET attempts = jsonb_set(attempts, '{-1,end}', to_jsonb(c.now)) ||
						jsonb_build_array(jsonb_build_object('id', 'attempt-2', 'start', c.now)),
					lease_expires_ns = c.now + 60000000000, updated_ns = c.now
					FROM (SELECT COALESCE($2::bigint, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000) AS now) c
					WHERE r.key = $1 RETURNING r.updated_ns`, req.Key, later).Scan(&changed); err != nil {
					t.Fatal(err)
				}
				if err := h.tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("%s after the lock wait = %v", w.name, err)
				}

				rec, err := s.Get(ctx, req.Key)
				if err != nil {
					t.Fatalf("Get = %v", err)
				}
				if err := machine.ValidateImport(&rec); err != nil {
					t.Errorf("the record after %s holds times out of order: %v\n%+v", w.name, err, rec)
				}
				if w.name == "renew" {
					if want := time.Unix(0, changed).Add(time.Minute); renewed.Before(want) || !rec.Lease.Expires.Equal(renewed) {
						t.Errorf("Renew = %v, stored %v; want at least a minute from the change it follows, %v",
							renewed, rec.Lease.Expires, want)
					}
				} else if rec.Updated.Before(time.Unix(0, changed)) {
					t.Errorf("the record after %s was updated %v, before the change it follows %v",
						w.name, rec.Updated, time.Unix(0, changed))
				}
			})
		}
	}
}
