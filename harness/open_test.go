package harness_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

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
	st, err := journal.Open(cctx, os.Getenv("AGENTONCE_PG_URL"), nil)
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
