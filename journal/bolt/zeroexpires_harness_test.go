package bolt_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// A settled record with a zero Expires records no TTL (an import from an
// older journal): a harness's re-issue of its intent is answered from it,
// and the tool does not run a second time, whether or not the harness
// takes its replay fast path (a store that does not offer local reads goes
// through Begin).
func TestZeroExpiresRecordIsNotRunAgain(t *testing.T) {
	fastRetry := &retryclass.Policy{MaxAttempts: 4, InitialInterval: time.Millisecond,
		MaxInterval: 2 * time.Millisecond, MaxElapsed: 5 * time.Second, InFlightBudget: 30 * time.Millisecond}
	mustRegister := func(t *testing.T, h *harness.Harness, tools ...harness.Tool) {
		t.Helper()
		if err := h.Register(tools...); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	ctx := context.Background()
	ns := uuid.New()
	var runs atomic.Int32
	pay := harness.Tool{Name: "pay", Effect: journal.Unkeyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"paid":4900}`), nil
		}}
	call := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "pay", Input: json.RawMessage(`{"amount":4900}`)}

	// The record as an older journal kept it: the payment happened once.
	old, err := bolt.Open(filepath.Join(t.TempDir(), "old.db"), &bolt.Options{Journal: journal.Options{Namespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	h := harness.New(old, &harness.Options{Retry: fastRetry})
	mustRegister(t, h, pay)
	first := h.Call(ctx, call)
	if first.Status != harness.Succeeded {
		t.Fatalf("first call: %v %v; want succeeded", first.Status, first.Err)
	}
	rec, err := old.Get(ctx, first.Key)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()

	for name, wrap := range map[string]func(journal.Store) journal.Store{
		"replay fast path": func(s journal.Store) journal.Store { return s },
		"through Begin":    func(s journal.Store) journal.Store { return struct{ journal.Store }{s} },
	} {
		t.Run(name, func(t *testing.T) {
			runs.Store(0)
			path := filepath.Join(t.TempDir(), "new.db")
			st, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: ns}})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Import(ctx, rec); err != nil {
				t.Fatalf("Import: %v", err)
			}
			st.Close()
			// Import refuses a record with no expiry (the state machine never
			// writes one), so the file is changed as an older version left it.
			clearExpires(t, path, rec.Key)
			st, err = bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: ns}})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got, err := st.Get(ctx, rec.Key); err != nil || !got.Expires.IsZero() {
				t.Fatalf("Get after clearing Expires = %v, %v; want a zero Expires", got.Expires, err)
			}
			h := harness.New(wrap(st), &harness.Options{Retry: fastRetry})
			mustRegister(t, h, pay)
			again := h.Call(ctx, call)
			if n := runs.Load(); n != 0 {
				t.Fatalf("tool runs on a re-issue = %d; want 0 (a record with no TTL is answered, never run again on a guess)", n)
			}
			if again.Status != harness.Succeeded || again.Source != harness.Replayed || string(again.Output) != `{"paid":4900}` {
				t.Fatalf("re-issue = %v %v %s, %v; want the recorded success, replayed", again.Status, again.Source, again.Output, again.Err)
			}
		})
	}
}

// clearExpires rewrites the record for key in the bbolt file at path with
// a zero Expires, sealed again, behind the store's back.
func clearExpires(t *testing.T, path string, key uuid.UUID) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		r, err := bolt.DecodeRecord(b.Get(key[:]))
		if err != nil {
			return err
		}
		r.Expires = time.Time{}
		return b.Put(key[:], bolt.EncodeRecord(nil, &r))
	})
	if err != nil {
		t.Fatal(err)
	}
}
