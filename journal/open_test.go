package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

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
	open := func(context.Context, string, journal.Options, struct{}) (journal.Store, error) { return nil, nil }
	journal.Register("agentonce-test", open)
	for _, tc := range []struct {
		scheme string
		open   func(context.Context, string, journal.Options, struct{}) (journal.Store, error)
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

// testOptions are the options of the store TestRegisterStoreOptions
// registers.
type testOptions struct{ Size int }

// Open hands a store the Options it was given, StoreOptions cleared, and
// a copy of the store's own options from StoreOptions; another type there
// is ErrInvalid, named without what the location's URL carries.
func TestRegisterStoreOptions(t *testing.T) {
	var gotJournal journal.Options
	var gotStore testOptions
	journal.Register("agentonce-opts", func(_ context.Context, _ string, jo journal.Options, o testOptions) (journal.Store, error) {
		gotJournal, gotStore = jo, o
		return nil, nil
	})
	ctx := context.Background()
	const loc = "agentonce-opts://user:secret@host/j"
	ns := uuid.New()
	so := &testOptions{Size: 3}
	if _, err := journal.Open(ctx, loc, &journal.Options{Namespace: ns, StoreOptions: so}); err != nil {
		t.Fatal(err)
	}
	if gotJournal.Namespace != ns || gotJournal.StoreOptions != nil || gotStore.Size != 3 {
		t.Errorf("Open(*testOptions) gave %+v, %+v; want the namespace, StoreOptions cleared, Size 3", gotJournal, gotStore)
	}
	gotStore = testOptions{Size: -1}
	if _, err := journal.Open(ctx, loc, nil); err != nil || gotStore.Size != 0 {
		t.Errorf("Open(nil options) = %v, store options %+v; want the zero options", err, gotStore)
	}
	_, err := journal.Open(ctx, loc, &journal.Options{StoreOptions: testOptions{}})
	if !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), "*journal_test.testOptions") || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open(StoreOptions of another type) = %v; want ErrInvalid naming *journal_test.testOptions, not the URL's password", err)
	}
}
