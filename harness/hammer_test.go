package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// TestHammer: 64 goroutines make 3,200 calls over 40 intents of an Unkeyed
// and a Keyed tool whose attempts fail at random (refused before sending,
// which is provably not executed). Invariants: every intent's effect
// happened exactly once, every call of an intent got that effect's output,
// and no call was unknown or rejected.
func TestHammer(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, &harness.Options{Retry: &retryclass.Policy{
		MaxAttempts: 20, InitialInterval: -1, InFlightBudget: -1, MaxElapsed: -1}})
	var mu sync.Mutex
	effects := map[uuid.UUID]int{}
	fn := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		if rand.IntN(3) == 0 {
			return nil, retryclass.MarkNotExecuted(errors.New("connection refused"))
		}
		key, _ := harness.KeyFromContext(ctx)
		mu.Lock()
		effects[key]++
		mu.Unlock()
		return json.RawMessage(fmt.Sprintf(`{"key":%q}`, key)), nil
	}
	mustRegister(t, h,
		harness.Tool{Name: "unkeyed", Effect: journal.Unkeyed, Func: fn},
		harness.Tool{Name: "keyed", Effect: journal.Keyed, Func: fn},
	)

	const workers, perWorker, intents = 64, 50, 40
	type seen struct {
		key uuid.UUID
		out string
	}
	results := make(chan seen, workers*perWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				n := (w*7 + i*13) % intents
				tool := []string{"unkeyed", "keyed"}[n%2]
				res := h.Call(context.Background(), call(tool, fmt.Sprintf(`{"n":%d}`, n)))
				if !res.OK() {
					t.Errorf("call %d of worker %d: %v, %v (%v)", i, w, res.Status, res.Err, res.Err)
					return
				}
				results <- seen{res.Key, string(res.Output)}
			}
		}()
	}
	wg.Wait()
	close(results)

	outputs := map[uuid.UUID]string{}
	for r := range results {
		if prev, ok := outputs[r.key]; ok && prev != r.out {
			t.Fatalf("intent %s answered %s and %s", r.key, prev, r.out)
		}
		outputs[r.key] = r.out
	}
	if len(outputs) != intents {
		t.Errorf("intents answered = %d; want %d", len(outputs), intents)
	}
	for key := range outputs {
		if n := effects[key]; n != 1 {
			t.Errorf("effects for key %s = %d; want 1", key, n)
		}
	}
	if len(effects) != intents {
		t.Errorf("keys with an effect = %d; want %d (no effect for a key nobody asked for)", len(effects), intents)
	}
}
