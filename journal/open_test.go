package journal_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/journal"
)

func TestOpenUnregisteredScheme(t *testing.T) {
	_, err := journal.Open(context.Background(), "mysql://db/agent", nil)
	if err == nil {
		t.Fatal(`Open("mysql://db/agent") = nil error; want "no store registered"`)
	}
	for _, want := range []string{`"mysql"`, "no store registered", "journal/postgres"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(mysql://…) error = %q; want it to mention %s", err, want)
		}
	}
}

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
		if _, ok := st.(*journal.BoltStore); !ok {
			t.Errorf("Open(%q) = %T; want *journal.BoltStore", loc, st)
		}
		st.Close()
	}
}

func TestRegisterRefusesBadSchemes(t *testing.T) {
	open := func(context.Context, string, *journal.Options) (journal.Store, error) { return nil, nil }
	journal.Register("agentonce-test", open)
	for _, tc := range []struct {
		scheme string
		open   journal.OpenFunc
	}{{"agentonce-test", open}, {"AgentOnce-Test", open}, {"", open}, {"x://", open}, {"nilfunc", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", tc.scheme)
				}
			}()
			journal.Register(tc.scheme, tc.open)
		}()
	}
}
