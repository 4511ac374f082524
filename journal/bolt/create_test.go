package bolt_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// Processes that create the same new journal at once end with one
// journal: each builds its own beside the path, the first link wins, and
// the others open the winner's (its namespace, not theirs). Nothing is
// left beside the journal.
func TestCreateRaceHasOneWinner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	const n = 8
	var wg sync.WaitGroup
	got := make([]uuid.UUID, n+1) // what each creator then read; the last: read after all
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := bolt.CreateBolt(path, uuid.New()); err != nil {
				t.Errorf("CreateBolt: %v", err)
				return
			}
			s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
			if err != nil {
				t.Errorf("open after CreateBolt: %v", err)
				return
			}
			got[i] = s.Namespace()
			s.Close()
		}()
	}
	wg.Wait()
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	got[n] = s.Namespace()
	s.Close()
	for _, ns := range got {
		if ns != got[n] {
			t.Fatalf("namespaces read by racing creators and after: %v; want one (a creator replaced another's journal)", got)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "j.db" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files beside the journal: %v; want only j.db", names)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v; want 0600", fi.Mode().Perm())
	}
}

// A creation that a crash cut short leaves its temporary file; the next
// creation removes it once it is old, and leaves a recent one (another
// process may be creating the journal now).
func TestCreateRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	stale, recent := path+".creating-111", path+".creating-222"
	for _, p := range []string{stale, recent} {
		if err := os.WriteFile(p, []byte("half a journal"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, path, nil)
	s.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recent temporary file was removed: %v", err)
	}
}
