package agentonce_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
)

func TestOpenByLocation(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/agent.journal"
	h, err := agentonce.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("Stat(%s): %v", path, err)
	}
	if got, want := info.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("journal file mode = %v; want %v", got, want)
	}

	// A schema of its own: the default one on a shared server may hold a
	// journal another build (a newer schema version) left.
	schema := pgtest.Schema(t, "open_")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := journal.Open(cctx, pgtest.URL(t), &journal.Options{StoreOptions: &postgres.Options{Schema: schema}})
	if err != nil {
		t.Fatalf("journal.Open(AGENTONCE_PG_URL): %v", err)
	}
	defer st.Close()
	if _, ok := st.(*postgres.Store); !ok {
		t.Errorf("journal.Open(postgres://…) = %T; want *postgres.Store", st)
	}
	if _, err := journal.Open(cctx, pgtest.URL(t), &journal.Options{StoreOptions: &bolt.Options{}}); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("journal.Open(postgres://…, StoreOptions *bolt.Options) = %v; want ErrInvalid", err)
	}
}

// Open passes OpenOptions.Journal to the journal it opens: a deployment can
// supply its secret namespace from configuration.
func TestOpenWithJournalOptions(t *testing.T) {
	ns := uuid.MustParse("6f1c2e0a-3b7d-4c5e-9a8b-1d2e3f405162")
	h, err := agentonce.Open(context.Background(), t.TempDir()+"/j", &agentonce.OpenOptions{Journal: &journal.Options{Namespace: ns}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer h.Close()
	if got := h.Store().Namespace(); got != ns {
		t.Errorf("Store().Namespace() = %s; want %s", got, ns)
	}
}

// A journal file another harness holds, or one that is not a journal,
// gives a clear error at Open, not a hang or a panic.
func TestOpenBadJournal(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/j"
	h, err := agentonce.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	defer h.Close()
	_, err = agentonce.Open(ctx, path, &agentonce.OpenOptions{Journal: &journal.Options{StoreOptions: &bolt.Options{LockTimeout: 50 * time.Millisecond}}})
	if !errors.Is(err, journal.ErrInUse) {
		t.Errorf("Open(held journal) = %v; want ErrInUse", err)
	}
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Open(held journal) = %v; want an error naming %s", err, path)
	}

	junk := t.TempDir() + "/junk"
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a journal\n", 600)), 0o600); err != nil {
		t.Fatalf("WriteFile(%s): %v", junk, err)
	}
	_, err = agentonce.Open(ctx, junk, nil)
	if !errors.Is(err, journal.ErrCorrupt) {
		t.Errorf("Open(not a journal) = %v; want ErrCorrupt", err)
	}
	if err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("Open(not a journal) = %v; want an error naming %s", err, junk)
	}
}

// The caller's Options.OnClose runs when the Harness closes, before Open's
// own closing: the journal is still open for it.
func TestOpenRunsCallersOnCloseFirst(t *testing.T) {
	ctx := context.Background()
	var h *harness.Harness
	var ran bool
	opts := &agentonce.OpenOptions{Inspect: agentonce.InspectOff}
	opts.OnClose = func() error {
		ran = true
		_, err := h.Store().Stats(ctx)
		return err
	}
	h, err := agentonce.Open(ctx, t.TempDir()+"/agent.journal", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil || !ran {
		t.Errorf("Close() = %v, OnClose ran %v; want nil and true (the journal still open for it)", err, ran)
	}
}
