package agentonce_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
)

// openRecordingNew opens a harness at location and returns the
// EventNewJournal events Open reported.
func openRecordingNew(t *testing.T, location string, opts *agentonce.OpenOptions) (*harness.Harness, []harness.Event, error) {
	t.Helper()
	var mu sync.Mutex
	var evs []harness.Event
	if opts == nil {
		opts = &agentonce.OpenOptions{}
	}
	opts.Observer = harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		if e.Kind == harness.EventNewJournal {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}
	})
	h, err := agentonce.Open(context.Background(), location, opts)
	return h, evs, err
}

// A lost journal is not silently replaced by one that derives other keys:
// with the namespace from configuration the keys survive, and a Keyed
// downstream still deduplicates the retry.
func TestNamespaceFromEnvironmentSurvivesALostJournal(t *testing.T) {
	ns := uuid.New()
	t.Setenv(agentonce.NamespaceEnv, ns.String())
	path := filepath.Join(t.TempDir(), "agent.journal")
	var down effects
	charge := harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			down.do(ctx) // a downstream that deduplicates by key would see the same key twice
			return json.RawMessage(`{"ok":true}`), nil
		}}
	var keys []uuid.UUID
	for round := range 2 {
		h, evs, err := openRecordingNew(t, path, nil)
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		if len(evs) != 1 || evs[0].Err != nil {
			t.Errorf("round %d: new-journal events = %+v; want one, without the random-namespace warning", round, evs)
		}
		if h.Store().Namespace() != ns {
			t.Errorf("round %d: namespace = %s; want %s from %s", round, h.Store().Namespace(), ns, agentonce.NamespaceEnv)
		}
		mustRegister(t, h, charge)
		keys = append(keys, mustCall(t, h, call("charge", `{"amount":4900}`)).Key)
		h.Close()
		if err := os.Remove(path); err != nil { // the disk is lost
			t.Fatal(err)
		}
	}
	if keys[0] != keys[1] {
		t.Errorf("keys before and after the lost journal = %s, %s; want the same", keys[0], keys[1])
	}
	if n := down.count(keys[0]); n != 2 {
		t.Errorf("requests for key %s = %d; want 2 under one key (the downstream's to deduplicate)", keys[0], n)
	}
}

func TestNewRandomNamespaceIsReported(t *testing.T) {
	t.Setenv(agentonce.NamespaceEnv, "")
	path := filepath.Join(t.TempDir(), "agent.journal")
	h, evs, err := openRecordingNew(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if len(evs) != 1 || evs[0].Err == nil || !strings.Contains(evs[0].Err.Error(), "random namespace") {
		t.Errorf("new-journal events = %+v; want one that warns of the random namespace", evs)
	}
	// Reopened: not new, nothing reported.
	h, evs, err = openRecordingNew(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if len(evs) != 0 {
		t.Errorf("reopen: new-journal events = %+v; want none", evs)
	}
}

func TestRequireJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	_, err := agentonce.Open(context.Background(), path, &agentonce.OpenOptions{RequireJournal: true})
	if !errors.Is(err, journal.ErrNoJournal) {
		t.Fatalf("Open(missing, RequireJournal) = %v; want ErrNoJournal", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing, RequireJournal) left a file: %v", err)
	}
	t.Setenv(agentonce.NamespaceEnv, "not-a-uuid")
	if _, err := agentonce.Open(context.Background(), path, nil); err == nil || !strings.Contains(err.Error(), agentonce.NamespaceEnv) {
		t.Errorf("Open with a bad %s = %v; want an error naming it", agentonce.NamespaceEnv, err)
	}
}

func TestRequireJournalPostgres(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, "harness_require_")
	loc := url + "&schema=" + schema
	if !strings.Contains(url, "?") {
		loc = url + "?schema=" + schema
	}
	_, err := agentonce.Open(context.Background(), loc, &agentonce.OpenOptions{RequireJournal: true})
	if !errors.Is(err, journal.ErrNoJournal) {
		t.Fatalf("Open(empty schema, RequireJournal) = %v; want ErrNoJournal", err)
	}
	h, evs, err := openRecordingNew(t, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if len(evs) != 1 {
		t.Errorf("new-journal events on a new schema = %d; want 1", len(evs))
	}
	h, err = agentonce.Open(context.Background(), loc, &agentonce.OpenOptions{RequireJournal: true})
	if err != nil {
		t.Fatalf("Open(existing schema, RequireJournal) = %v", err)
	}
	h.Close()
}

// A new journal with a random namespace is a warning on slog.Default()
// when no Logger is set; a configured namespace writes nothing there.
func TestNewRandomNamespaceWarnsOnDefaultLogger(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	old, out, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil)))
	t.Cleanup(func() { slog.SetDefault(old); log.SetOutput(out); log.SetFlags(flags) })
	lines := func(journal string) []string {
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, journal) {
				got = append(got, l)
			}
		}
		return got
	}

	t.Setenv(agentonce.NamespaceEnv, "")
	random := filepath.Join(t.TempDir(), "random.journal")
	h, err := agentonce.Open(context.Background(), random, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := lines(random); len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "new random namespace") {
		t.Errorf("slog.Default() got %q; want one warning of the new random namespace", got)
	}
	t.Setenv(agentonce.NamespaceEnv, uuid.NewString())
	configured := filepath.Join(t.TempDir(), "configured.journal")
	if h, err = agentonce.Open(context.Background(), configured, nil); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := lines(configured); len(got) != 0 {
		t.Errorf("with a configured namespace, slog.Default() got %q; want nothing", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
