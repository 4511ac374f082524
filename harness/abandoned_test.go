package harness_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// gatedBegin holds every Begin until the gate opens, then fails it if its
// context ended meanwhile: a journal slow to answer a caller who left.
type gatedBegin struct {
	journal.Store
	gate <-chan struct{}
}

func (s gatedBegin) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	<-s.gate
	if err := ctx.Err(); err != nil {
		return journal.BeginResult{}, err
	}
	return s.Store.Begin(ctx, req)
}

// A call that joins a flight whose every caller left is answered for its
// own intent, not with the refusal the others' cancellation made (the
// hammer saw "rejected: journal: context canceled" for an intent that had
// taken effect).
func TestJoinerOfAbandonedFlight(t *testing.T) {
	store, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gate := make(chan struct{})
	var runs atomic.Int32
	h := harness.New(gatedBegin{Store: store, gate: gate}, &harness.Options{Retry: fastRetry})
	mustRegister(t, h, harness.Tool{Name: "pay", Effect: journal.Keyed, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{"paid":1}`), nil
	}})
	call := harness.ToolCall{Tenant: "t", Session: "s", Turn: "1", Tool: "pay", Input: json.RawMessage(`{"n":1}`)}

	actx, cancel := context.WithCancel(context.Background())
	left := make(chan harness.Result)
	go func() { left <- h.Call(actx, call) }()
	time.Sleep(20 * time.Millisecond) // let the first caller's flight reach Begin
	cancel()
	if r := <-left; r.Status != harness.Rejected && r.Status != harness.InProgress {
		t.Fatalf("the caller that left = %v; want rejected (nothing started) or in progress", r.Status)
	}
	joined := make(chan harness.Result)
	go func() { joined <- h.Call(context.Background(), call) }()
	time.Sleep(50 * time.Millisecond) // let it join the abandoned flight
	close(gate)
	res := <-joined
	if res.Status != harness.Succeeded || runs.Load() != 1 {
		t.Errorf("a call that joined an abandoned flight = %v (%v), tool runs %d; want succeeded, 1", res.Status, res.Err, runs.Load())
	}
}
