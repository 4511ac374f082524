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

// TestOpenPathWithoutBolt: journal alone has no store for plain paths, and
// says which package to import.
func TestOpenPathWithoutBolt(t *testing.T) {
	_, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), nil)
	if err == nil || !strings.Contains(err.Error(), "journal/bolt") {
		t.Errorf("Open(path) without journal/bolt = %v; want an error naming journal/bolt", err)
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
