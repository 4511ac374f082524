package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
)

// countingStore is a real store whose Get, Begin and Complete calls are
// counted. It forwards LocalReads, as a wrapper that keeps its store's
// capabilities does.
type countingStore struct {
	journal.Store
	gets, begins, completes atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	c.begins.Add(1)
	return c.Store.Begin(ctx, req)
}

func (c *countingStore) Complete(ctx context.Context, cm journal.Completion) (journal.Record, error) {
	c.completes.Add(1)
	return c.Store.Complete(ctx, cm)
}

func (c *countingStore) LocalReads() bool {
	l, ok := c.Store.(interface{ LocalReads() bool })
	return ok && l.LocalReads()
}

// counts is what the store was asked since the last call.
func (c *countingStore) counts() (gets, begins, completes int64) {
	return c.gets.Swap(0), c.begins.Swap(0), c.completes.Swap(0)
}

// On bbolt a new key costs the store one Begin and one Complete and no
// read before them. Its retry to the same Middleware costs the store
// nothing (the answer it recorded is kept in memory); to another one
// (another process on the journal) one Begin, which answers it by a local
// read, and that Middleware's next retry nothing. On PostgreSQL, whose
// Begin on a settled record costs more than a Get, every request the
// Middleware cannot answer from memory is read first: a new key is a Get
// more, a replay through another Middleware one Get. Another payload is a
// Get (its key was seen) and the Begin that refuses it.
func TestStoreCallsPerRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		open  func(t *testing.T) journal.Store
		gets  int64    // the Gets before a new key's Begin
		other [2]int64 // a replay's Gets and Begins through another Middleware
	}{
		{"bbolt", func(t *testing.T) journal.Store {
			return openAt(t, filepath.Join(t.TempDir(), "server.journal"))
		}, 0, [2]int64{0, 1}},
		{"postgres", func(t *testing.T) journal.Store {
			return openPG(t, pgtest.URL(t), pgtest.Schema(t, "agentonce_idemtrips_"))
		}, 1, [2]int64{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{Store: tc.open(t)}
			var effects atomic.Int64
			handler := func() http.Handler {
				m, err := idempotency.New(store, &idempotency.Options{ErrorLog: t.Logf})
				if err != nil {
					t.Fatal(err)
				}
				return muxFor(m.Handler(bareCharge(func(*http.Request) error { effects.Add(1); return nil })))
			}
			send := func(h http.Handler, key, body string) int {
				req := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w.Code
			}
			check := func(what string, gets, begins, completes int64) {
				t.Helper()
				if g, b, c := store.counts(); g != gets || b != begins || c != completes {
					t.Errorf("%s: %d Get, %d Begin, %d Complete; want %d, %d, %d", what, g, b, c, gets, begins, completes)
				}
			}
			h, other := handler(), handler()
			if st := send(h, "k1", benchBody); st != http.StatusOK {
				t.Fatalf("new key = %d; want 200", st)
			}
			check("new key", tc.gets, 1, 1)
			if st := send(h, "k1", benchBody); st != http.StatusOK {
				t.Fatalf("replay = %d; want 200", st)
			}
			check("replay", 0, 0, 0)
			if st := send(other, "k1", benchBody); st != http.StatusOK {
				t.Fatalf("replay through another Middleware = %d; want 200", st)
			}
			check("replay through another Middleware", tc.other[0], tc.other[1], 0)
			if st := send(other, "k1", benchBody); st != http.StatusOK {
				t.Fatalf("second replay through another Middleware = %d; want 200", st)
			}
			check("second replay through another Middleware", 0, 0, 0)
			if st := send(h, "k1", `{"amount":1}`); st != http.StatusUnprocessableEntity {
				t.Fatalf("other payload = %d; want 422", st)
			}
			check("other payload", 1, 1, 0)
			if n := effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}
