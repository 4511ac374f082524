package bolt_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

func TestOpenPathIsBolt(t *testing.T) {
	// A path whose directory name holds "://" is still a path.
	dir := filepath.Join(t.TempDir(), "a:")
	for _, loc := range []string{filepath.Join(t.TempDir(), "j.db"), dir + "//j.db"} {
		st, err := journal.Open(context.Background(), loc, nil)
		if err != nil {
			if strings.Contains(err.Error(), "no store registered") {
				t.Errorf("Open(%q) took a path for a scheme: %v", loc, err)
			}
			continue
		}
		if _, ok := st.(*bolt.Store); !ok {
			t.Errorf("Open(%q) = %T; want *bolt.Store", loc, st)
		}
		st.Close()
	}
}

// TestOpenStoreOptions: journal.Open passes a *bolt.Options in
// StoreOptions on, accepts file://, and refuses another type by name.
func TestOpenStoreOptions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	st, err := journal.Open(ctx, "file://"+path, &journal.Options{StoreOptions: &bolt.Options{MaxBatchSize: 8}})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = journal.Open(ctx, path, &journal.Options{StoreOptions: 3})
	if err == nil || !strings.Contains(err.Error(), "*bolt.Options") {
		t.Errorf("Open with StoreOptions int = %v; want an error naming *bolt.Options", err)
	}
}
