package agentonce_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/retryclass"
)

// fastRetry keeps the tests' backoff in the milliseconds.
var fastRetry = &retryclass.Policy{
	MaxAttempts:     4,
	InitialInterval: time.Millisecond,
	MaxInterval:     2 * time.Millisecond,
	MaxElapsed:      5 * time.Second,
	InFlightBudget:  30 * time.Millisecond,
}

// effects is a side effect under test: it counts how often each key's
// effect really happened, the way a downstream would.
type effects struct {
	mu    sync.Mutex
	byKey map[uuid.UUID]int
}

func (e *effects) do(ctx context.Context) {
	key, _ := downstream.KeyFromContext(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKey == nil {
		e.byKey = map[uuid.UUID]int{}
	}
	e.byKey[key]++
}

func (e *effects) count(key uuid.UUID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byKey[key]
}

func call(tool, input string) harness.ToolCall {
	return harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: tool, Input: json.RawMessage(input)}
}

// mustRegister registers tools; a test cannot go on without them.
func mustRegister(t *testing.T, h *harness.Harness, tools ...harness.Tool) {
	t.Helper()
	if err := h.Register(tools...); err != nil {
		t.Fatalf("Register: %v", err)
	}
}

// mustCall makes a call that must not come back with an error; the result
// is for the caller to check.
func mustCall(t *testing.T, h *harness.Harness, c harness.ToolCall) harness.Result {
	t.Helper()
	res := h.Call(context.Background(), c)
	if res.Status == harness.Rejected {
		t.Fatalf("Call(%s %s): %v", c.Tool, c.Input, res.Err)
	}
	return res
}
