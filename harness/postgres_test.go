package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

// pgStore opens the PostgreSQL journal in a schema of the test's own, or
// skips the test when AGENTONCE_PG_URL is not set.
func pgStore(t *testing.T) *postgres.Store {
	t.Helper()
	schema := pgtest.Schema(t, "harness_test_")
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(t), &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	_, err = st.Pool().Exec(ctx, `CREATE TABLE `+pgx.Identifier{schema, "charges"}.Sanitize()+
		` (key uuid NOT NULL, amount int NOT NULL)`)
	if err != nil {
		t.Fatalf("creating the charges table: %v", err)
	}
	return st
}

// The effect and its outcome commit in one transaction: a failed attempt
// leaves no effect behind, the retry makes exactly one, and a replay makes
// none.
func TestInTxEffectAndOutcomeCommitTogether(t *testing.T) {
	st := pgStore(t)
	h := newHarness(t, st, nil)
	table := pgx.Identifier{st.Schema(), "charges"}.Sanitize()
	tries := 0
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed,
		InTx: postgres.InTx(func(ctx context.Context, tx pgx.Tx, in json.RawMessage) (json.RawMessage, error) {
			tries++
			key, _ := downstream.KeyFromContext(ctx)
			var req struct{ Amount int }
			if err := json.Unmarshal(in, &req); err != nil {
				return nil, retryclass.Permanent(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (key, amount) VALUES ($1, $2)`, key, req.Amount); err != nil {
				return nil, err
			}
			if tries == 1 {
				// Fails after its write: the write must roll back with it.
				return nil, errors.New("read: connection reset by peer")
			}
			return json.RawMessage(`{"charged":true}`), nil
		})})
	ctx := context.Background()
	c := call("charge", `{"amount":4900}`)
	res := mustCall(t, h, c)
	if !res.OK() || res.Source != harness.Executed {
		t.Fatalf("Status = %v; want %v (err %v)", res.Status, harness.Executed, res.Err)
	}
	if tries != 2 {
		t.Fatalf("tries = %d; want 2", tries)
	}

	var rows int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE key = $1`, res.Key).Scan(&rows); err != nil {
		t.Fatalf("counting charges: %v", err)
	}
	if rows != 1 {
		t.Errorf("charges for key %s in the database = %d; want 1", res.Key, rows)
	}

	again := mustCall(t, h, c)
	if !again.OK() || again.Source != harness.Replayed {
		t.Errorf("re-issue: Status = %v; want %v", again.Status, harness.Replayed)
	}
	if want := `{"charged":true}`; !sameJSON(again.Output, []byte(want)) {
		t.Errorf("re-issue: Output = %s; want %s", again.Output, want)
	}
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&rows); err != nil {
		t.Fatalf("counting charges: %v", err)
	}
	if rows != 1 {
		t.Errorf("charges in the database after the replay = %d; want 1", rows)
	}
	if tries != 2 {
		t.Errorf("tries after the replay = %d; want 2", tries)
	}
}

// A store without CompleteWith (the in-memory one; bbolt and PostgreSQL
// have it) is refused for an InTx tool.
func TestInTxNeedsCompleteWith(t *testing.T) {
	h := newHarness(t, memory.New(nil), nil)
	err := h.Register(harness.Tool{Name: "x", InTx: postgres.InTx(func(context.Context, pgx.Tx, json.RawMessage) (json.RawMessage, error) { return nil, nil })})
	if err == nil || !strings.Contains(err.Error(), "CompleteWith") {
		t.Errorf("Register(InTx tool) on a memory journal = %v; want an error naming CompleteWith", err)
	}
}
