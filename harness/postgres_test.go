package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
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
		InTx: func(ctx context.Context, tx pgx.Tx, in json.RawMessage) (json.RawMessage, error) {
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
		}}))
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
	err := h.Register(harness.Tool{Name: "x", InTx: func(context.Context, pgx.Tx, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
	require.ErrorContains(t, err, "PostgreSQL")
}

func TestOpenByLocation(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/agent.journal"
	h, err := harness.Open(ctx, path, nil)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	if os.Getenv("AGENTONCE_PG_URL") == "" {
		t.Skip("AGENTONCE_PG_URL is not set")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := harness.OpenStore(cctx, os.Getenv("AGENTONCE_PG_URL"), nil)
	require.NoError(t, err)
	defer st.Close()
	_, ok := st.(*postgres.Store)
	require.True(t, ok, "a postgres:// location opens the PostgreSQL store, got %T", st)
}

// Open passes Options.Journal to the journal it opens: a deployment can
// supply its secret namespace from configuration.
func TestOpenWithJournalOptions(t *testing.T) {
	ns := uuid.MustParse("6f1c2e0a-3b7d-4c5e-9a8b-1d2e3f405162")
	h, err := harness.Open(context.Background(), t.TempDir()+"/j", &harness.Options{Journal: &journal.Options{Namespace: ns}})
	require.NoError(t, err)
	defer h.Close()
	require.Equal(t, ns, h.Store().Namespace())
}

// A journal file another harness holds, or one that is not a journal,
// gives a clear error at Open, not a hang or a panic.
func TestOpenBadJournal(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/j"
	h, err := harness.Open(ctx, path, nil)
	require.NoError(t, err)
	defer h.Close()
	_, err = harness.Open(ctx, path, &harness.Options{Journal: &journal.Options{LockTimeout: 50 * time.Millisecond}})
	require.ErrorIs(t, err, journal.ErrInUse)
	require.ErrorContains(t, err, path)

	junk := t.TempDir() + "/junk"
	require.NoError(t, os.WriteFile(junk, []byte(strings.Repeat("not a journal\n", 600)), 0o600))
	_, err = harness.Open(ctx, junk, nil)
	require.ErrorIs(t, err, journal.ErrCorrupt)
	require.ErrorContains(t, err, junk)
}
