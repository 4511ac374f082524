package harness_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// countingStore is a real bbolt store whose Gets and Begins are counted;
// it forwards the capabilities the harness looks for (LocalReads, Now).
type countingStore struct {
	*bolt.Store
	gets, begins atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	c.begins.Add(1)
	return c.Store.Begin(ctx, req)
}

var (
	_ interface{ LocalReads() bool } = (*countingStore)(nil)
	_ interface{ Now() time.Time }   = (*countingStore)(nil)
)

// A new call reads nothing before its Begin; its re-issue is answered by
// one Get (the replay path), and by one Begin from another harness on the
// journal, which has not seen it.
func TestNoReadBeforeBeginOfNewCall(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "h.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store := &countingStore{Store: st}
	var runs atomic.Int64
	newHarness := func() *harness.Harness {
		h := harness.New(store, &harness.Options{Retry: fastRetry, LeaseTTL: time.Minute})
		t.Cleanup(func() { h.Close() })
		if err := h.Register(harness.Tool{Name: "charge", Effect: journal.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				return json.RawMessage(`{"id":"ch_1"}`), nil
			}}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	h, other := newHarness(), newHarness()
	c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge", Input: json.RawMessage(`{"amount":4900}`)}
	for _, step := range []struct {
		what         string
		h            *harness.Harness
		source       harness.Source
		gets, begins int64
	}{
		{"new call", h, harness.Executed, 0, 1},
		{"re-issue", h, harness.Replayed, 1, 0},
		{"re-issue to another harness", other, harness.Replayed, 0, 1},
	} {
		store.gets.Store(0)
		store.begins.Store(0)
		res := step.h.Call(context.Background(), c)
		if !res.OK() || res.Source != step.source || string(res.Output) != `{"id":"ch_1"}` {
			t.Fatalf("%s = %v %v %s, %v; want OK, %v", step.what, res.Status, res.Source, res.Output, res.Err, step.source)
		}
		if g, b := store.gets.Load(), store.begins.Load(); g != step.gets || b != step.begins {
			t.Errorf("%s: %d Get, %d Begin; want %d, %d", step.what, g, b, step.gets, step.begins)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}
}
