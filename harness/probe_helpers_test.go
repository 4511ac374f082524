package harness_test

// Helpers shared by the probe tests (issues 13 and 14): stores, harnesses,
// a ledger that counts effects the way a downstream would, and the status
// checks. Every check on a Result's status lives here, so that the port to
// the split Status/Source API touches one file.

import (
	"cmp"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

// probeRetry keeps backoff in the milliseconds and waits up to 5 s for an
// intent in flight elsewhere, longer than any probe's slow tool.
var probeRetry = &retryclass.Policy{
	MaxAttempts:     3,
	InitialInterval: time.Millisecond,
	MaxInterval:     5 * time.Millisecond,
	MaxElapsed:      10 * time.Second,
	InFlightBudget:  5 * time.Second,
}

func probeBolt(t *testing.T, opts *journal.Options) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "agent.journal"), &bolt.Options{Journal: *cmp.Or(opts, new(journal.Options))})
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// probePG opens a PostgreSQL journal in a schema of the test's own (the
// test skips without AGENTONCE_PG_URL). With schema set it opens that one
// instead, as a second client of the same journal.
func probePG(t *testing.T, schema string, opts *journal.Options) *postgres.Store {
	t.Helper()
	if schema == "" {
		schema = pgtest.Schema(t, "harness_probe_")
	}
	st, err := postgres.Open(context.Background(), pgtest.URL(t), &postgres.Options{Schema: schema, Journal: *cmp.Or(opts, new(journal.Options))})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func probeHarness(t *testing.T, st journal.Store, opts *harness.Options) *harness.Harness {
	t.Helper()
	if opts == nil {
		opts = &harness.Options{}
	}
	if opts.Retry == nil {
		opts.Retry = probeRetry
	}
	h := harness.New(st, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

func probeRegister(t *testing.T, h *harness.Harness, tools ...harness.Tool) {
	t.Helper()
	if err := h.Register(tools...); err != nil {
		t.Fatalf("Register: %v", err)
	}
}

func probeCall(tool, input string) harness.ToolCall {
	return harness.ToolCall{Tenant: "acme", Session: "probe", Turn: "1", Tool: tool, Input: json.RawMessage(input)}
}

// ledger is a downstream's record of side effects: how often each key's
// effect really happened, and how often an execution for a key started
// while another for the same key was still running.
type ledger struct {
	mu       sync.Mutex
	done     map[string]int
	running  map[string]int
	overlaps int
}

func (l *ledger) start(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running = map[string]int{}
	}
	if l.running[key] > 0 {
		l.overlaps++
	}
	l.running[key]++
}

func (l *ledger) finish(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[key]--
}

func (l *ledger) effect(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = map[string]int{}
	}
	l.done[key]++
}

func (l *ledger) happened(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[key] > 0
}

func (l *ledger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.done {
		n += c
	}
	return n
}

func (l *ledger) concurrent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.overlaps
}

func ctxKey(ctx context.Context) string {
	k, _ := downstream.KeyFromContext(ctx)
	return k.String()
}

// ledgerReconcile answers "did key K happen?" truthfully from l.
func ledgerReconcile(l *ledger, out string) func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation {
	return func(_ context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
		if l.happened(key.String()) {
			return downstream.Happened(json.RawMessage(out))
		}
		return downstream.DidNotHappen()
	}
}

// describe prints a Result for a failure message.
func describe(r harness.Result) string {
	return r.Status.String() + "/" + r.Source.String() + " attempts=" + strconv.Itoa(r.Attempts) + " err=" + errString(r.Err) + " model=" + r.ForModel()
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// isSuccess reports that the caller was told the tool succeeded.
func isSuccess(r harness.Result) bool { return r.OK() }

// executedHere reports that the tool ran in this call and succeeded.
func executedHere(r harness.Result) bool { return r.OK() && r.Source == harness.Executed }

// isInProgress reports that the caller was told the action is under way.
func isInProgress(r harness.Result) bool { return r.Status == harness.InProgress }

// isUnknown reports an unknown outcome.
func isUnknown(r harness.Result) bool { return r.Status == harness.Unknown }

// isSuppressed reports a 409/422-class stop.
func isSuppressed(r harness.Result) bool { return r.Status == harness.Suppressed }

// isFailed reports a definite failure ("nothing was done").
func isFailed(r harness.Result) bool { return r.Status == harness.Failed }

// isRejected reports a call refused before it ran.
func isRejected(r harness.Result) bool { return r.Status == harness.Rejected }

// saidNothingHappened reports that the model was told nothing was done.
func saidNothingHappened(r harness.Result) bool {
	return strings.Contains(r.ForModel(), "nothing was done")
}

// saidDidNotRun reports that the model was told the call did not run.
func saidDidNotRun(r harness.Result) bool {
	return strings.Contains(r.ForModel(), "did not run")
}

// toldTheTruthLater reports that a second caller of an intent another owner
// was running was answered with that owner's success (replayed or
// collapsed) or told it is still in progress; never a run of its own.
func toldTheTruthLater(r harness.Result) bool {
	if r.OK() {
		return r.Source == harness.Replayed || r.Source == harness.Collapsed
	}
	oe, ok := r.Err.(*harness.OutcomeError)
	return isInProgress(r) || (isSuppressed(r) && ok && oe.Class == retryclass.InFlight)
}
