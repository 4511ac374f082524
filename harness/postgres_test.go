package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/pgtest"
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
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Pool().Exec(ctx, `CREATE TABLE `+pgx.Identifier{schema, "charges"}.Sanitize()+
		` (key uuid NOT NULL, amount int NOT NULL)`)
	require.NoError(t, err)
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
	require.NoError(t, h.Register(harness.Tool{Name: "charge", Effect: harness.Keyed,
		InTx: postgres.InTx(func(ctx context.Context, tx pgx.Tx, in json.RawMessage) (json.RawMessage, error) {
			tries++
			key, _ := harness.KeyFromContext(ctx)
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
		})}))
	ctx := context.Background()
	c := call("charge", `{"amount":4900}`)
	res, err := h.Call(ctx, c)
	require.NoError(t, err)
	require.Equal(t, harness.Executed, res.Status, "%v", res.Err)
	require.Equal(t, 2, tries)

	var rows int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE key = $1`, res.Key).Scan(&rows))
	require.Equal(t, 1, rows, "effects in the database")

	again, err := h.Call(ctx, c)
	require.NoError(t, err)
	require.Equal(t, harness.Replayed, again.Status)
	require.JSONEq(t, `{"charged":true}`, string(again.Output))
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&rows))
	require.Equal(t, 1, rows)
	require.Equal(t, 2, tries)
}

func TestInTxNeedsPostgres(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	err := h.Register(harness.Tool{Name: "x", InTx: postgres.InTx(func(context.Context, pgx.Tx, json.RawMessage) (json.RawMessage, error) { return nil, nil })})
	require.ErrorContains(t, err, "PostgreSQL")
}
