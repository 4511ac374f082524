package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// answersHarness is one Middleware on a counted bbolt store, its handler
// running effect, and a sender of the charge with key.
func answersHarness(t *testing.T, opts *idempotency.Options, effect func(*http.Request) error) (
	*countingStore, func(key string) *httptest.ResponseRecorder) {
	store := &countingStore{Store: openAt(t, filepath.Join(t.TempDir(), "server.journal"))}
	if opts == nil {
		opts = &idempotency.Options{}
	}
	opts.ErrorLog = t.Logf
	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := muxFor(m.Handler(bareCharge(effect)))
	return store, func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
}

// An unknown outcome is never answered from memory: once an operator
// resolves it, the next request with its key gets the verdict, from the
// same Middleware that answered "unknown" before.
func TestResolvedUnknownIsNotAnsweredFromMemory(t *testing.T) {
	var effects atomic.Int64
	store, send := answersHarness(t, nil, func(*http.Request) error {
		effects.Add(1)
		panic("the card network hung up")
	})
	func() {
		defer func() { recover() }() // the handler's panic, which net/http's server would recover
		send("k1")
	}()
	var key journal.Record
	for rec, err := range store.List(context.Background(), journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		key = rec
	}
	if key.State != journal.StateUnknown {
		t.Fatalf("record = %v; want unknown", key.State)
	}
	if w := send("k1"); w.Code != http.StatusInternalServerError {
		t.Fatalf("retry before the verdict = %d; want 500", w.Code)
	}
	if _, err := store.Resolve(context.Background(), key.Key, journal.Resolution{State: journal.StateSucceeded,
		Output: []byte(`{"id":"ch_resolved"}`), Reason: "the card network shows the charge", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	w := send("k1")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "ch_resolved") {
		t.Errorf("retry after the verdict = %d %q; want 200 with the verdict's output", w.Code, w.Body)
	}
	if n := effects.Load(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
}

// A stored answer within a minute of its expiry is asked of the store, not
// answered from memory: its expiry is the store's to judge. Far from it,
// a retry costs the store nothing.
func TestAnswerNearExpiryAsksTheStore(t *testing.T) {
	for _, tc := range []struct {
		ttl   time.Duration
		calls int64 // the store calls of a retry
	}{{30 * time.Second, 2}, {time.Hour, 0}} {
		var effects atomic.Int64
		store, send := answersHarness(t, &idempotency.Options{TTL: tc.ttl},
			func(*http.Request) error { effects.Add(1); return nil })
		if w := send("k1"); w.Code != http.StatusOK {
			t.Fatalf("TTL %v: first request = %d", tc.ttl, w.Code)
		}
		store.counts()
		if w := send("k1"); w.Code != http.StatusOK || w.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("TTL %v: retry = %d, replayed %q; want a 200 replay", tc.ttl, w.Code, w.Header().Get("Idempotent-Replayed"))
		}
		if g, b, c := store.counts(); g+b+c != tc.calls {
			t.Errorf("TTL %v: the retry cost %d Get, %d Begin, %d Complete; want %d calls", tc.ttl, g, b, c, tc.calls)
		}
		if n := effects.Load(); n != 1 {
			t.Errorf("TTL %v: effects = %d; want 1", tc.ttl, n)
		}
	}
}

// A 5xx the middleware released runs again on the next request, however
// often the same Middleware answered it: a released record is never
// answered from memory.
func TestReleasedIsNotAnsweredFromMemory(t *testing.T) {
	var effects atomic.Int64
	_, send := answersHarness(t, nil, func(*http.Request) error {
		if effects.Add(1) < 3 {
			return errString("the ledger is down")
		}
		return nil
	})
	for i, want := range []int{500, 500, 200, 200} {
		if w := send("k1"); w.Code != want {
			t.Fatalf("request %d = %d; want %d", i+1, w.Code, want)
		}
	}
	if n := effects.Load(); n != 3 {
		t.Errorf("effects = %d; want 3 (two released, one stored)", n)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
