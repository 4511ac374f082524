package harness_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
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
	total int
}

func (e *effects) do(ctx context.Context) uuid.UUID {
	key, _ := downstream.KeyFromContext(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKey == nil {
		e.byKey = map[uuid.UUID]int{}
	}
	e.byKey[key]++
	e.total++
	return key
}

func (e *effects) count(key uuid.UUID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byKey[key]
}

func (e *effects) all() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

func openBolt(t *testing.T, path string, opts *journal.Options) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(path, &bolt.Options{Journal: *cmp.Or(opts, new(journal.Options))})
	if err != nil {
		t.Fatalf("OpenBolt(%s): %v", path, err)
	}
	return st
}

func newHarness(t *testing.T, st journal.Store, opts *harness.Options) *harness.Harness {
	t.Helper()
	if opts == nil {
		opts = &harness.Options{}
	}
	if opts.Retry == nil {
		opts.Retry = fastRetry
	}
	h := harness.New(st, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

// openOwned opens a Harness on the bbolt file at path that its Close
// closes (Options.OnClose), as agentonce.Open's does.
func openOwned(path string) (*harness.Harness, error) {
	st, err := bolt.Open(path, nil)
	if err != nil {
		return nil, err
	}
	return harness.New(st, &harness.Options{Retry: fastRetry, OnClose: st.Close}), nil
}

func tempJournal(t *testing.T) (string, *bolt.Store) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	st := openBolt(t, path, nil)
	t.Cleanup(func() { st.Close() })
	return path, st
}

func call(tool, input string) harness.ToolCall {
	return harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: tool, Input: json.RawMessage(input)}
}

func echoOutput(key uuid.UUID, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"charge":"ch_%s","n":%d}`, key.String()[:8], n))
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

// mustGet reads the journal's record of key.
func mustGet(t *testing.T, st journal.Store, key uuid.UUID) journal.Record {
	t.Helper()
	rec, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return rec
}

// sameJSON reports whether a and b are both valid JSON for the same value,
// whatever their spacing and key order.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// Behaviour 1: the downstream commits but the answer is lost; the retry
// carries the same key, the downstream absorbs it, and the caller gets the
// first result.
func TestAnswerLostRetriesWithSameKey(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var down effects
	var mu sync.Mutex
	firstResult := map[uuid.UUID]json.RawMessage{}
	var keysSeen []uuid.UUID
	var attemptsSeen []string
	calls := 0
	mustRegister(t, h, harness.Tool{Name: "charge_card", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := downstream.KeyFromContext(ctx)
			att, _ := downstream.AttemptFromContext(ctx)
			mu.Lock()
			defer mu.Unlock()
			calls++
			keysSeen, attemptsSeen = append(keysSeen, key), append(attemptsSeen, att)
			// A downstream that honours the key: the effect happens once,
			// repeats get the stored answer.
			if _, ok := firstResult[key]; !ok {
				down.do(ctx)
				firstResult[key] = echoOutput(key, 1)
			}
			if calls == 1 {
				return nil, retryclass.MarkMaybeExecuted(errors.New("connection reset by peer after the request was sent"))
			}
			return firstResult[key], nil
		}})

	res := mustCall(t, h, call("charge_card", `{"amount":4900,"currency":"usd"}`))
	if !res.OK() || res.Source != harness.Executed {
		t.Fatalf("res.Status = %v; want %v (err %v)", res.Status, harness.Executed, res.Err)
	}
	if calls != 2 {
		t.Fatalf("tool calls = %d; want 2", calls)
	}
	if res.Attempts != 2 {
		t.Errorf("res.Attempts = %d; want 2", res.Attempts)
	}
	if n := down.all(); n != 1 {
		t.Errorf("side effects downstream = %d; want 1", n)
	}
	if keysSeen[0] != keysSeen[1] {
		t.Errorf("retry key = %s; want the first attempt's %s", keysSeen[1], keysSeen[0])
	}
	if attemptsSeen[0] == attemptsSeen[1] {
		t.Errorf("both attempts have id %q; want an id per attempt", attemptsSeen[0])
	}
	if !sameJSON(res.Output, firstResult[res.Key]) {
		t.Errorf("res.Output = %s; want the first result %s", res.Output, firstResult[res.Key])
	}

	rec := mustGet(t, st, res.Key)
	if rec.State != journal.StateSucceeded {
		t.Errorf("record state = %v; want %v", rec.State, journal.StateSucceeded)
	}
	if len(rec.Attempts) != 2 {
		t.Fatalf("recorded attempts = %d; want 2", len(rec.Attempts))
	}
	if got, want := rec.Attempts[0].Class, retryclass.MaybeExecuted.String(); got != want {
		t.Errorf("first attempt's class = %q; want %q", got, want)
	}
}

// Behaviour 2: parallel duplicates, in one CallAll and across goroutines,
// make one execution; everyone gets the result.
func TestParallelDuplicatesCollapse(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var down effects
	release := make(chan struct{})
	mustRegister(t, h, harness.Tool{Name: "send", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			<-release
			key := down.do(ctx)
			return echoOutput(key, 1), nil
		}})

	t.Run("CallAll", func(t *testing.T) {
		close(release)
		calls := []harness.ToolCall{
			call("send", `{"to":"a@example.com","body":"hi"}`),
			call("send", `{"body":"hi", "to":"a@example.com"}`), // same intent, other spelling
			call("send", `{"to":"b@example.com","body":"hi"}`),
			call("send", `{"to":"a@example.com","body":"hi"}`),
		}
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%d", i)
		}
		res := h.CallAll(context.Background(), calls)
		if len(res) != 4 {
			t.Fatalf("CallAll of 4 calls returned %d results; want 4", len(res))
		}
		for i, r := range res {
			if r.CallID != calls[i].ID {
				t.Fatalf("result %d: CallID = %q; want %q (results come back in order)", i, r.CallID, calls[i].ID)
			}
			if !r.OK() {
				t.Fatalf("result %d: OK() = false; want true (status %v, err %v)", i, r.Status, r.Err)
			}
		}
		for i, want := range []harness.Source{harness.Executed, harness.Collapsed, harness.Executed, harness.Collapsed} {
			if res[i].Source != want {
				t.Errorf("result %d: Source = %v; want %v", i, res[i].Source, want)
			}
		}
		if res[1].Key != res[0].Key {
			t.Errorf("result 1: Key = %s; want result 0's %s (same intent, other spelling)", res[1].Key, res[0].Key)
		}
		if res[3].Key != res[0].Key {
			t.Errorf("result 3: Key = %s; want result 0's %s", res[3].Key, res[0].Key)
		}
		if res[2].Key == res[0].Key {
			t.Errorf("result 2: Key = %s, the same as result 0's; want another intent's key", res[2].Key)
		}
		if n := down.count(res[0].Key); n != 1 {
			t.Errorf("effects for key %s = %d; want 1", res[0].Key, n)
		}
		if n := down.all(); n != 2 {
			t.Errorf("effects in all = %d; want 2", n)
		}
	})

	t.Run("goroutines", func(t *testing.T) {
		before := down.all()
		const n = 1000
		results := make([]harness.Result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := h.Call(context.Background(), call("send", `{"to":"c@example.com","body":"race"}`))
				if r.Status == harness.Rejected {
					t.Error(r.Err)
				}
				results[i] = r
			}()
		}
		wg.Wait()
		if got := down.all() - before; got != 1 {
			t.Fatalf("executions for %d racing calls = %d; want 1", n, got)
		}
		executed := 0
		for i, r := range results {
			if !r.OK() {
				t.Fatalf("call %d: OK() = false; want true (status %v, err %v)", i, r.Status, r.Err)
			}
			if !bytes.Equal(r.Output, results[0].Output) {
				t.Fatalf("call %d: Output = %s; want call 0's %s", i, r.Output, results[0].Output)
			}
			if r.OK() && r.Source == harness.Executed {
				executed++
			}
		}
		if executed != 1 {
			t.Errorf("calls executed = %d; want 1 (the rest collapsed or replayed)", executed)
		}
	})
}

// Behaviour 3: the same intent re-issued after success is replayed, in
// the same process and after reopening the journal, with the same model
// text.
func TestReplayAfterSuccessAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	var down effects
	tool := harness.Tool{Name: "charge_card", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key := down.do(ctx)
			return echoOutput(key, down.all()), nil
		}}
	c := call("charge_card", `{"amount":4900,"currency":"usd"}`)

	h, err := openOwned(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	mustRegister(t, h, tool)
	first := mustCall(t, h, c)
	if !first.OK() || first.Source != harness.Executed {
		t.Fatalf("first call: Status = %v; want %v (err %v)", first.Status, harness.Executed, first.Err)
	}
	again := mustCall(t, h, c)
	if !again.OK() || again.Source != harness.Replayed {
		t.Errorf("re-issue: Status = %v; want %v", again.Status, harness.Replayed)
	}
	if again.Source != harness.Replayed {
		t.Errorf("re-issue: FromJournal = false; want true")
	}
	if got, want := again.ForModel(), first.ForModel(); got != want {
		t.Errorf("re-issue: ForModel() = %q; want the first call's %q", got, want)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	h2, err := openOwned(path)
	if err != nil {
		t.Fatalf("reopen %s: %v", path, err)
	}
	defer h2.Close()
	mustRegister(t, h2, tool)
	after := mustCall(t, h2, c)
	if !after.OK() || after.Source != harness.Replayed {
		t.Errorf("after reopen: Status = %v; want %v", after.Status, harness.Replayed)
	}
	if after.Key != first.Key {
		t.Errorf("after reopen: Key = %s; want %s", after.Key, first.Key)
	}
	if !sameJSON(after.Output, first.Output) {
		t.Errorf("after reopen: Output = %s; want %s", after.Output, first.Output)
	}
	if got, want := after.ForModel(), first.ForModel(); got != want {
		t.Errorf("after reopen: ForModel() = %q; want %q", got, want)
	}
	if n := down.all(); n != 1 {
		t.Errorf("side effects = %d; want 1", n)
	}
}

// Behaviour 4: 409 is waited out within the in-flight budget, then
// suppressed; 422 is suppressed at once; re-issues get the recorded
// suppression; altered input after a suppression is refused too.
func TestSuppression(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var tries409, tries422 atomic.Int32
	mustRegister(t, h,
		harness.Tool{Name: "busy", Effect: journal.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				tries409.Add(1)
				return nil, &retryclass.StatusError{Status: 409}
			}},
		harness.Tool{Name: "mismatch", Effect: journal.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				tries422.Add(1)
				return nil, &retryclass.StatusError{Status: 422}
			}},
	)

	r409 := mustCall(t, h, call("busy", `{"order":1}`))
	if r409.Status != harness.Suppressed {
		t.Errorf("409: Status = %v; want %v", r409.Status, harness.Suppressed)
	}
	if n := tries409.Load(); n <= 1 {
		t.Errorf("409: tries = %d; want more than 1 (waited out with retries under the same key)", n)
	}
	var oe *harness.OutcomeError
	if !errors.As(r409.Err, &oe) {
		t.Fatalf("409: Err = %v (%T); want an *OutcomeError", r409.Err, r409.Err)
	}
	if oe.Class != retryclass.InFlight {
		t.Errorf("409: OutcomeError.Class = %v; want %v", oe.Class, retryclass.InFlight)
	}

	r422 := mustCall(t, h, call("mismatch", `{"order":1}`))
	if r422.Status != harness.Suppressed {
		t.Errorf("422: Status = %v; want %v", r422.Status, harness.Suppressed)
	}
	if n := tries422.Load(); n != 1 {
		t.Errorf("422: tries = %d; want 1 (stops at once)", n)
	}

	// The model re-issues both: the mismatch is a recorded suppression and
	// the tool does not run; the in-flight suppression is not a final answer,
	// so its re-issue asks the downstream again (still 409: suppressed).
	n409, n422 := tries409.Load(), tries422.Load()
	again := mustCall(t, h, call("mismatch", `{"order":1}`))
	if again.Status != harness.Suppressed {
		t.Errorf("422 re-issued: Status = %v; want %v", again.Status, harness.Suppressed)
	}
	if again.Source != harness.Replayed {
		t.Errorf("422 re-issued: FromJournal = false; want true")
	}
	if got, want := again.ForModel(), r422.ForModel(); got != want {
		t.Errorf("422 re-issued: ForModel() = %q; want the first answer %q", got, want)
	}
	again409 := mustCall(t, h, call("busy", `{"order":1}`))
	if again409.Status != harness.Suppressed {
		t.Errorf("409 re-issued: Status = %v; want %v", again409.Status, harness.Suppressed)
	}
	if n := tries409.Load(); n <= n409 {
		t.Errorf("409 re-issued: tries = %d; want more than %d (an in-flight suppression is not final: the re-issue asks again)", n, n409)
	}
	n409 = tries409.Load()

	// The model alters the input to dodge the key: refused, not run.
	dodge := mustCall(t, h, call("mismatch", `{"order":1,"note":"try again"}`))
	if dodge.Status != harness.Suppressed {
		t.Errorf("altered input: Status = %v; want %v", dodge.Status, harness.Suppressed)
	}
	if n := tries409.Load(); n != n409 {
		t.Errorf("409 tries after the re-issues = %d; want %d (not run again)", n, n409)
	}
	if n := tries422.Load(); n != n422 {
		t.Errorf("422 tries after the re-issues = %d; want %d (not run again)", n, n422)
	}

	// A new user turn is a new intent: the guard does not reach it.
	next := call("mismatch", `{"order":1,"note":"try again"}`)
	next.Turn = "2"
	mustCall(t, h, next)
	if n := tries422.Load(); n != n422+1 {
		t.Errorf("422 tries after a new turn = %d; want %d", n, n422+1)
	}

	// The caller (not the model) can switch the guard off.
	h2 := newHarness(t, st, &harness.Options{Guard: journal.GuardOff})
	mustRegister(t, h2, harness.Tool{Name: "mismatch", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			tries422.Add(1)
			return json.RawMessage(`{}`), nil
		}})
	free := mustCall(t, h2, call("mismatch", `{"order":1,"note":"operator retry"}`))
	if !free.OK() || free.Source != harness.Executed {
		t.Errorf("guard off: Status = %v; want %v (err %v)", free.Status, harness.Executed, free.Err)
	}
}

// Behaviour 5: retryable failures retry with backoff under the same key,
// a new attempt id each time, each attempt recorded before it runs; an
// Unkeyed maybe-executed failure is not retried.
func TestRetriesRecordEachAttemptFirst(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var attempts []string
	var recorded []int
	mustRegister(t, h, harness.Tool{Name: "flaky", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := downstream.KeyFromContext(ctx)
			id, _ := downstream.AttemptFromContext(ctx)
			attempts = append(attempts, id)
			rec, err := st.Get(ctx, key)
			if err != nil {
				return nil, err
			}
			recorded = append(recorded, len(rec.Attempts))
			if len(attempts) < 3 {
				// Refused before it reached the server: provably not executed.
				return nil, retryclass.MarkNotExecuted(errors.New("connection refused"))
			}
			return json.RawMessage(`"ok"`), nil
		}})
	res := mustCall(t, h, call("flaky", `{}`))
	if !res.OK() || res.Source != harness.Executed {
		t.Fatalf("flaky: Status = %v; want %v (err %v)", res.Status, harness.Executed, res.Err)
	}
	if res.Attempts != 3 {
		t.Errorf("flaky: Attempts = %d; want 3", res.Attempts)
	}
	if want := []int{1, 2, 3}; !slices.Equal(recorded, want) {
		t.Errorf("attempts recorded as each attempt ran = %v; want %v (attempt n is in the journal before it runs)", recorded, want)
	}
	if len(attempts) != 3 {
		t.Fatalf("flaky: tool ran %d times; want 3", len(attempts))
	}
	if distinct := map[string]bool{attempts[0]: true, attempts[1]: true, attempts[2]: true}; len(distinct) != 3 {
		t.Errorf("attempt ids %q: %d distinct; want 3", attempts, len(distinct))
	}

	var runs int
	mustRegister(t, h, harness.Tool{Name: "email", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			return nil, errors.New("read: connection reset by peer")
		}})
	res = mustCall(t, h, call("email", `{"to":"x"}`))
	if res.Status != harness.Unknown {
		t.Errorf("email: Status = %v; want %v", res.Status, harness.Unknown)
	}
	if runs != 1 {
		t.Errorf("email runs = %d; want 1 (an Unkeyed maybe-executed failure is never retried)", runs)
	}
	again := mustCall(t, h, call("email", `{"to":"x"}`))
	if again.Status != harness.Unknown {
		t.Errorf("email re-issued: Status = %v; want %v", again.Status, harness.Unknown)
	}
	if runs != 1 {
		t.Errorf("email runs after a re-issue = %d; want 1 (never re-run by a re-issue)", runs)
	}
}

func TestUnkeyedReconcile(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	sent := map[uuid.UUID]bool{}
	runs := 0
	mustRegister(t, h, harness.Tool{Name: "email", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			key, _ := downstream.KeyFromContext(ctx)
			if runs == 1 {
				sent[key] = true // sent, but the answer is lost
				return nil, errors.New("read: connection reset by peer")
			}
			return json.RawMessage(`"sent"`), nil
		},
		// The downstream is this test's map: nothing acts after the tool
		// returns, so no settle window is needed.
		Settle: -1,
		Reconcile: func(ctx context.Context, key uuid.UUID, in json.RawMessage) downstream.Reconciliation {
			if sent[key] {
				return downstream.Happened(json.RawMessage(`"sent (reconciled)"`))
			}
			return downstream.DidNotHappen()
		}})
	res := mustCall(t, h, call("email", `{"to":"x"}`))
	if !res.OK() || res.Source != harness.Reconciled {
		t.Errorf("Status = %v (%v); want succeeded (reconciled) (err %v)", res.Status, res.Source, res.Err)
	}
	if got, want := string(res.Output), `"sent (reconciled)"`; got != want {
		t.Errorf("Output = %s; want %s", got, want)
	}
	if runs != 1 {
		t.Errorf("tool runs = %d; want 1", runs)
	}
}

// The crashing process of TestTakeoverAfterCrash is this test binary run
// again with these set: the journal's path, the tool's effect kind and the
// downstream's file.
const (
	crashJournalEnv = "AGENTONCE_HARNESS_CRASH_JOURNAL"
	crashEffectEnv  = "AGENTONCE_HARNESS_CRASH_EFFECT"
	crashDownEnv    = "AGENTONCE_HARNESS_CRASH_DOWNSTREAM"
)

// crashPay is the tool of TestTakeoverAfterCrash. Its short timeout keeps
// the Unkeyed settle window (timeout + settle, during which the restart
// must not take over) short.
func crashPay(effect journal.Effect, fn harness.Func) harness.Tool {
	// The Unkeyed pay declares a short settle window (its downstream is a
	// file), so that the restarted process need not wait DefaultSettle.
	return harness.Tool{Name: "pay", Effect: effect, Timeout: 10 * time.Millisecond, Settle: 10 * time.Millisecond, Func: fn}
}

// TestTakeoverAfterCrashChild is the process TestTakeoverAfterCrash kills:
// it calls pay, whose effect is a line in the downstream's file, says so
// on stdout and waits for its SIGKILL before the outcome is recorded.
func TestTakeoverAfterCrashChild(t *testing.T) {
	path := os.Getenv(crashJournalEnv)
	if path == "" {
		t.Skip("helper process for TestTakeoverAfterCrash")
	}
	n, err := strconv.Atoi(os.Getenv(crashEffectEnv))
	if err != nil {
		t.Fatalf("effect kind: %v", err)
	}
	effect := journal.Effect(n)
	st := openBolt(t, path, nil)
	h := harness.New(st, &harness.Options{Owner: "dead"})
	mustRegister(t, h, crashPay(effect, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		key, _ := downstream.KeyFromContext(ctx)
		if err := appendLine(os.Getenv(crashDownEnv), key.String()); err != nil {
			t.Fatalf("downstream: %v", err)
		}
		fmt.Println("child: effect", key)
		select {} // the SIGKILL comes here, after the effect, before the outcome
	}))
	h.Call(context.Background(), call("pay", `{"amount":100}`))
	t.Fatalf("Call returned; want the process killed in the tool")
}

// appendLine appends line to the file at path, the crashing process's
// downstream: a write(2) that its SIGKILL cannot undo.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Behaviour 6: the process is killed (SIGKILL) after the tool's effect and
// before its outcome is recorded, and restarted on the same journal. An
// Unkeyed write-ahead was on disk before the tool ran, so the restart finds
// the intent pending and answers unknown, never running it again; a Keyed
// or Idempotent one need not have been (the crash may lose it), and the
// restart runs the tool again under the same key, which the downstream
// absorbs.
func TestTakeoverAfterCrash(t *testing.T) {
	for _, effect := range []journal.Effect{journal.Keyed, journal.Idempotent, journal.Unkeyed} {
		t.Run(effect.String(), func(t *testing.T) {
			dir := t.TempDir()
			path, downPath := filepath.Join(dir, "agent.journal"), filepath.Join(dir, "downstream")
			input := `{"amount":100}`

			// The dead process: begins the intent, runs the effect, and is
			// killed before it records the outcome.
			key := crashChild(t, effect, path, downPath)
			effectsDown := func() int {
				b, err := os.ReadFile(downPath)
				if err != nil {
					t.Fatalf("reading the downstream: %v", err)
				}
				return strings.Count(string(b), key.String())
			}
			if n := effectsDown(); n != 1 {
				t.Fatalf("effects before the restart = %d; want 1", n)
			}

			// The restarted process: the reopened journal's leases are dead.
			st2 := openBolt(t, path, nil)
			defer st2.Close()
			if rec, err := st2.Get(context.Background(), key); effect == journal.Unkeyed && (err != nil || rec.State != journal.StatePending) {
				t.Errorf("Unkeyed record after the crash: %v, %v; want %v (its write-ahead was durable)", rec.State, err, journal.StatePending)
			}
			h2 := newHarness(t, st2, nil)
			mustRegister(t, h2, crashPay(effect, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				k, _ := downstream.KeyFromContext(ctx)
				if k != key {
					t.Errorf("re-run key = %s; want the dead process's %s", k, key)
				}
				if err := appendLine(downPath, k.String()); err != nil {
					return nil, err
				}
				return json.RawMessage(`"paid"`), nil
			}))
			res := mustCall(t, h2, call("pay", input))
			if effect == journal.Unkeyed {
				if res.Status != harness.Unknown {
					t.Errorf("Status = %v; want %v (Unkeyed without Reconcile is never re-run silently)", res.Status, harness.Unknown)
				}
				if n := effectsDown(); n != 1 {
					t.Errorf("effects = %d; want 1", n)
				}
				again := mustCall(t, h2, call("pay", input))
				if again.Status != harness.Unknown {
					t.Errorf("re-issue: Status = %v; want %v", again.Status, harness.Unknown)
				}
				if n := effectsDown(); n != 1 {
					t.Errorf("effects after a re-issue = %d; want 1", n)
				}
				return
			}
			if !res.OK() || res.Source != harness.Executed {
				t.Errorf("Status = %v/%v; want %v/%v (err %v)", res.Status, res.Source, harness.Succeeded, harness.Executed, res.Err)
			}
			if n := effectsDown(); n != 2 {
				t.Errorf("effects for key %s = %d; want 2 (re-run under the same key: a keyed downstream absorbs it)", key, n)
			}
		})
	}
}

// crashChild runs TestTakeoverAfterCrashChild on the journal at path and
// SIGKILLs it once its tool's effect is in the downstream's file; it
// returns the intent's key.
func crashChild(t *testing.T, effect journal.Effect, path, downPath string) uuid.UUID {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTakeoverAfterCrashChild$")
	cmd.Env = append(os.Environ(), crashJournalEnv+"="+path, crashEffectEnv+"="+strconv.Itoa(int(effect)), crashDownEnv+"="+downPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}
	var key uuid.UUID
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "child: effect "); ok {
			key, err = uuid.Parse(rest)
			break
		}
	}
	if key == uuid.Nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child never reported its effect (%v)\nstderr: %s", err, stderr.Bytes())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v; want SIGKILL\nstderr: %s", werr, stderr.Bytes())
	}
	return key
}

// TestCrashThenRefusedIsNotFailed: a Keyed or Idempotent call's process is
// killed after its tool's effect, and the restarted process's attempts of
// the same intent all provably do nothing (the downstream refuses them).
// "Failed" says that no attempt of the intent may have run, which the
// killed one may have: the answer must be Unknown. Its non-durable
// write-ahead used to die with the process, so the restart began afresh
// and answered Failed (agentcheck seed 7311, RELIABILITY.md); the journal
// now keeps it (journal/bolt's pending log).
func TestCrashThenRefusedIsNotFailed(t *testing.T) {
	for _, effect := range []journal.Effect{journal.Keyed, journal.Idempotent} {
		t.Run(effect.String(), func(t *testing.T) {
			dir := t.TempDir()
			path, downPath := filepath.Join(dir, "agent.journal"), filepath.Join(dir, "downstream")
			key := crashChild(t, effect, path, downPath)

			st := openBolt(t, path, nil)
			defer st.Close()
			h := newHarness(t, st, nil)
			var refused atomic.Int32
			mustRegister(t, h, crashPay(effect, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				refused.Add(1)
				return nil, retryclass.MarkNotExecuted(errors.New("connection refused"))
			}))
			res := mustCall(t, h, call("pay", `{"amount":100}`))
			if res.Key != key {
				t.Fatalf("key = %s; want the killed process's %s", res.Key, key)
			}
			if refused.Load() == 0 {
				t.Fatalf("the restarted tool never ran")
			}
			if res.Status != harness.Unknown {
				t.Errorf("Status = %v (err %v); want %v: the killed attempt's effect is in the downstream", res.Status, res.Err, harness.Unknown)
			}
		})
	}
}

// Behaviour 7: the same explicit step key with a different input.
func TestStepKeyMismatch(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var down effects
	mustRegister(t, h, harness.Tool{Name: "ship", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			down.do(ctx)
			return json.RawMessage(`"shipped"`), nil
		}})
	c := call("ship", `{"sku":"A","qty":1}`)
	c.StepKey = "order-77/ship"
	first := mustCall(t, h, c)
	if !first.OK() || first.Source != harness.Executed {
		t.Fatalf("first: Status = %v; want %v (err %v)", first.Status, harness.Executed, first.Err)
	}
	c.Input = json.RawMessage(`{"sku":"A","qty":2}`)
	second := mustCall(t, h, c)
	if second.Status != harness.Suppressed {
		t.Errorf("other input: Status = %v; want %v", second.Status, harness.Suppressed)
	}
	if second.Key != first.Key {
		t.Errorf("other input: Key = %s; want the step's %s", second.Key, first.Key)
	}
	if n := down.all(); n != 1 {
		t.Errorf("effects = %d; want 1", n)
	}
	var oe *harness.OutcomeError
	if !errors.As(second.Err, &oe) {
		t.Fatalf("other input: Err = %v (%T); want an *OutcomeError", second.Err, second.Err)
	}
	if oe.Class != retryclass.Mismatch {
		t.Errorf("OutcomeError.Class = %v; want %v", oe.Class, retryclass.Mismatch)
	}
	if rec := mustGet(t, st, first.Key); rec.State != journal.StateSucceeded {
		t.Errorf("first intent's record state = %v; want %v (untouched)", rec.State, journal.StateSucceeded)
	}
}

// Behaviour 8: a panicking tool.
func TestPanic(t *testing.T) {
	for _, tc := range []struct {
		effect journal.Effect
		status harness.Status
		state  journal.State
	}{
		{journal.Keyed, harness.Unknown, journal.StateUnknown},
		{journal.Unkeyed, harness.Unknown, journal.StateUnknown},
		// A panic may strike after the effect: only a tool without one
		// records a definite failure ("nothing was done").
		{journal.Idempotent, harness.Unknown, journal.StateUnknown},
		{journal.ReadOnly, harness.Failed, journal.StateFailed},
	} {
		t.Run(tc.effect.String(), func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			runs := 0
			mustRegister(t, h, harness.Tool{Name: "boom", Effect: tc.effect, Journal: true,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					runs++
					panic("nil map write")
				}})
			res := mustCall(t, h, call("boom", `{}`))
			if res.Status != tc.status {
				t.Errorf("Status = %v; want %v", res.Status, tc.status)
			}
			if runs != 1 {
				t.Errorf("tool runs = %d; want 1 (a panic is not retried)", runs)
			}
			var pe *harness.PanicError
			if !errors.As(res.Err, &pe) {
				t.Fatalf("Err = %v (%T); want a *PanicError", res.Err, res.Err)
			}
			if pe.Value != "nil map write" {
				t.Errorf("PanicError.Value = %#v; want %q", pe.Value, "nil map write")
			}
			if !bytes.Contains(pe.Stack, []byte("harness_test")) {
				t.Errorf("PanicError.Stack does not name harness_test:\n%s", pe.Stack)
			}
			if rec := mustGet(t, st, res.Key); rec.State != tc.state {
				t.Errorf("record state = %v; want %v", rec.State, tc.state)
			}
		})
	}
}

// Behaviour 9: bad input is rejected; nothing recorded, tool not run.
func TestRejectedCalls(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, &harness.Options{})
	runs := 0
	mustRegister(t, h, harness.Tool{Name: "t", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`1`), nil
		}})
	big := make([]byte, 0, 2<<20)
	big = append(big, `{"x":"`...)
	for len(big) < (1<<20)+10 {
		big = append(big, 'a')
	}
	big = append(big, `"}`...)
	deep := ""
	for range 100 {
		deep += "["
	}
	for range 100 {
		deep += "]"
	}
	wantInvalid := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, harness.ErrInvalidInput) {
			t.Errorf("err = %v; want ErrInvalidInput", err)
		}
	}
	for _, tc := range []struct {
		name  string
		c     harness.ToolCall
		check func(t *testing.T, err error)
	}{
		{"invalid JSON", call("t", `{"amount":}`), func(t *testing.T, err error) {
			wantInvalid(t, err)
			if !strings.Contains(err.Error(), "offset") {
				t.Errorf("err = %q; want it to give the offset", err)
			}
		}},
		{"oversize", call("t", string(big)), wantInvalid},
		{"too deep", call("t", deep), wantInvalid},
		{"unknown tool", call("nope", `{}`), func(t *testing.T, err error) {
			if !errors.Is(err, harness.ErrUnknownTool) || !strings.Contains(err.Error(), `"nope"`) {
				t.Fatalf("err = %v; want ErrUnknownTool naming the tool", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.Call(context.Background(), tc.c)
			if res.Err == nil {
				t.Fatalf("Call res.Err = nil; want an error (status %v)", res.Status)
			}
			if res.Status != harness.Rejected {
				t.Errorf("Status = %v; want %v", res.Status, harness.Rejected)
			}
			tc.check(t, res.Err)
		})
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if stats.Records != 0 {
		t.Errorf("records = %d; want 0 (nothing recorded)", stats.Records)
	}
	if runs != 0 {
		t.Errorf("tool runs = %d; want 0", runs)
	}

	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if res := h.Call(context.Background(), call("t", `{}`)); res.Status != harness.Rejected || !errors.Is(res.Err, harness.ErrClosed) {
		t.Errorf("Call after Close = %v, %v; want rejected with ErrClosed", res.Status, res.Err)
	}

	// A journal that fails: closed under the harness.
	h2 := newHarness(t, st, nil)
	mustRegister(t, h2, harness.Tool{Name: "t", Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		runs++
		return nil, nil
	}})
	if err := st.Close(); err != nil {
		t.Fatalf("closing the journal: %v", err)
	}
	res := h2.Call(context.Background(), call("t", `{}`))
	if !errors.Is(res.Err, journal.ErrClosed) {
		t.Errorf("Call on a closed journal: res.Err = %v; want journal.ErrClosed", res.Err)
	}
	if res.Status != harness.Rejected {
		t.Errorf("Call on a closed journal: Status = %v; want %v", res.Status, harness.Rejected)
	}
	if runs != 0 {
		t.Errorf("tool runs on a closed journal = %d; want 0", runs)
	}
}

// Behaviour 10: a record past its TTL; a genuine late call runs anew.
func TestExpiredRecordRunsAnew(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC) // ahead of the wall clock: expiry must follow the store's clock
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := openBolt(t, filepath.Join(t.TempDir(), "j"), &journal.Options{Now: clock})
	defer st.Close()
	h := newHarness(t, st, &harness.Options{RecordTTL: time.Hour})
	var down effects
	mustRegister(t, h, harness.Tool{Name: "pay", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			down.do(ctx)
			return json.RawMessage(`"paid"`), nil
		}})
	c := call("pay", `{"amount":1}`)
	if r1 := mustCall(t, h, c); !r1.OK() || r1.Source != harness.Executed {
		t.Fatalf("first: Status = %v; want %v (err %v)", r1.Status, harness.Executed, r1.Err)
	}
	mu.Lock()
	now = now.Add(59 * time.Minute)
	mu.Unlock()
	if r2 := h.Call(context.Background(), c); !r2.OK() || r2.Source != harness.Replayed {
		t.Fatalf("59 minutes later: Status = %v; want %v", r2.Status, harness.Replayed)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if r3 := mustCall(t, h, c); !r3.OK() || r3.Source != harness.Executed {
		t.Errorf("past its TTL: Status = %v; want %v (the record is gone and the call runs anew)", r3.Status, harness.Executed)
	}
	if n := down.all(); n != 2 {
		t.Errorf("effects = %d; want 2", n)
	}
}

func TestTypedTool(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	type in struct {
		Amount   int    `json:"amount"`
		Currency string `json:"currency"`
	}
	type out struct {
		ID string `json:"id"`
	}
	tool := harness.Typed("charge", journal.Keyed, func(ctx context.Context, i in) (out, error) {
		return out{ID: fmt.Sprintf("%d-%s", i.Amount, i.Currency)}, nil
	})
	if tool.InputType != reflect.TypeFor[in]() {
		t.Errorf("Typed(...).InputType = %v; want %v", tool.InputType, reflect.TypeFor[in]())
	}
	mustRegister(t, h, tool)
	res := mustCall(t, h, call("charge", `{"amount":5,"currency":"eur"}`))
	if want := `{"id":"5-eur"}`; !sameJSON(res.Output, []byte(want)) {
		t.Errorf("Output = %s; want %s", res.Output, want)
	}

	bad := mustCall(t, h, call("charge", `{"amount":5,"currncy":"eur"}`))
	if bad.Status != harness.Failed {
		t.Errorf("typo in input: Status = %v; want %v (a typo the model can correct is a terminal failure)", bad.Status, harness.Failed)
	}
	if got := bad.ForModel(); !strings.Contains(got, "currncy") {
		t.Errorf("typo in input: ForModel() = %q; want it to name currncy", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	fn := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return nil, nil }
	if err := h.Register(harness.Tool{Func: fn}); !errors.Is(err, harness.ErrToolName) {
		t.Errorf("Register(no name) = %v; want ErrToolName", err)
	}
	mustRegister(t, h, harness.Tool{Name: "a", Func: fn})
	if err := h.Register(harness.Tool{Name: "b", Func: fn}, harness.Tool{Name: "a", Func: fn}); !errors.Is(err, harness.ErrDuplicateTool) {
		t.Errorf("Register(b, a again) = %v; want ErrDuplicateTool", err)
	}
	res := h.Call(context.Background(), call("b", `{}`))
	if res.Status != harness.Rejected || !errors.Is(res.Err, harness.ErrUnknownTool) {
		t.Errorf("Call(b) = %v, %v; want rejected with ErrUnknownTool (a failed Register adds none of its tools)", res.Status, res.Err)
	}
	if err := h.Register(harness.Tool{Name: "c"}); err == nil {
		t.Errorf("Register(nil Func) = nil; want an error")
	}
	if err := h.Register(harness.Tool{Name: "d", Func: fn, Schema: json.RawMessage(`{"type":`)}); err == nil {
		t.Errorf("Register(bad schema) = nil; want an error")
	}
}

// Privacy: the journal can keep only the fingerprint of an input, and a
// redacted output.
func TestFingerprintOnlyAndRedact(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, &harness.Options{
		FingerprintOnly: true,
		Redact: func(tool string, out json.RawMessage) json.RawMessage {
			return json.RawMessage(`{"card":"****"}`)
		},
	})
	mustRegister(t, h, harness.Tool{Name: "tokenize", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"card":"4242424242424242"}`), nil
		}})
	c := call("tokenize", `{"pan":"4242424242424242"}`)
	const plain, redacted = `{"card":"4242424242424242"}`, `{"card":"****"}`
	first := mustCall(t, h, c)
	if !sameJSON(first.Output, []byte(plain)) {
		t.Errorf("executing caller's Output = %s; want the real output %s", first.Output, plain)
	}
	rec := mustGet(t, st, first.Key)
	if rec.Input != nil {
		t.Errorf("recorded input = %q; want none", rec.Input)
	}
	if rec.Fingerprint.IsZero() {
		t.Errorf("recorded fingerprint is zero; want the input's fingerprint kept")
	}
	if !sameJSON(rec.Output, []byte(redacted)) {
		t.Errorf("recorded output = %s; want %s", rec.Output, redacted)
	}
	again := mustCall(t, h, c)
	if !again.OK() || again.Source != harness.Replayed {
		t.Errorf("re-issue: Status = %v; want %v", again.Status, harness.Replayed)
	}
	if !sameJSON(again.Output, []byte(redacted)) {
		t.Errorf("re-issue: Output = %s; want what was stored, %s", again.Output, redacted)
	}
}

// Outcomes that a re-issue may run again: a failure that provably did not
// execute (its retry budget ran out on refusals), and an unknown outcome of
// a Keyed tool, whose downstream absorbs the repeat under the same key.
// An Unkeyed unknown is never run again (TestRetriesRecordEachAttemptFirst).
func TestReissueRunsWhatMayRunAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		effect  journal.Effect
		fail    error
		status  harness.Status
		attempt int // attempts of the first call
	}{
		{"not-executed failure", journal.Unkeyed, retryclass.MarkNotExecuted(errors.New("connection refused")), harness.Failed, 4},
		{"keyed unknown", journal.Keyed, errors.New("read: connection reset by peer"), harness.Unknown, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			failing := true
			var keys []uuid.UUID
			mustRegister(t, h, harness.Tool{Name: "op", Effect: tc.effect,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					k, _ := downstream.KeyFromContext(ctx)
					keys = append(keys, k)
					if failing {
						return nil, tc.fail
					}
					return json.RawMessage(`"done"`), nil
				}})
			c := call("op", `{"x":1}`)
			first := mustCall(t, h, c)
			if first.Status != tc.status {
				t.Fatalf("first: Status = %v; want %v", first.Status, tc.status)
			}
			if len(keys) != tc.attempt {
				t.Fatalf("first: tool ran %d times; want %d (the retry budget was spent)", len(keys), tc.attempt)
			}

			failing = false
			again := mustCall(t, h, c)
			if !again.OK() || again.Source != harness.Executed {
				t.Fatalf("re-issue: Status = %v; want %v (the re-issue runs; err %v)", again.Status, harness.Executed, again.Err)
			}
			if len(keys) != tc.attempt+1 {
				t.Fatalf("tool runs after the re-issue = %d; want %d", len(keys), tc.attempt+1)
			}
			if last := keys[len(keys)-1]; last != keys[0] {
				t.Errorf("re-issue key = %s; want the first call's %s", last, keys[0])
			}
			if again.Attempts != tc.attempt+1 {
				t.Errorf("re-issue: Attempts = %d; want %d (the journal keeps every attempt)", again.Attempts, tc.attempt+1)
			}

			third := mustCall(t, h, c)
			if !third.OK() || third.Source != harness.Replayed {
				t.Errorf("after success: Status = %v; want %v (answered from the journal)", third.Status, harness.Replayed)
			}
			if len(keys) != tc.attempt+1 {
				t.Errorf("tool runs after success and a re-issue = %d; want %d", len(keys), tc.attempt+1)
			}
		})
	}
}

// An operator settles an unknown intent (agentctl resolve); the harness then
// answers the re-issued call with the operator's verdict.
func TestResolvedIntentIsAnswered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    journal.Resolution
		status harness.Status
		text   string
	}{
		{"succeeded", journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"sent":true}`), Reason: "provider log shows it", By: "ops"},
			harness.Succeeded, `{"sent":true}`},
		{"failed", journal.Resolution{State: journal.StateFailed, Reason: "provider never received it", By: "ops"},
			harness.Failed, "The tool failed and nothing was done: provider never received it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			runs := 0
			mustRegister(t, h, harness.Tool{Name: "email", Effect: journal.Unkeyed,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					runs++
					return nil, errors.New("read: connection reset by peer")
				}})
			c := call("email", `{"to":"x"}`)
			first := mustCall(t, h, c)
			if first.Status != harness.Unknown {
				t.Fatalf("first: Status = %v; want %v", first.Status, harness.Unknown)
			}

			if _, err := st.Resolve(context.Background(), first.Key, tc.res); err != nil {
				t.Fatalf("Resolve(%s): %v", first.Key, err)
			}
			again := mustCall(t, h, c)
			if again.Status != tc.status || again.Source != harness.Replayed {
				t.Errorf("after Resolve: Status = %v (%v); want %v (replayed)", again.Status, again.Source, tc.status)
			}
			if got := again.ForModel(); got != tc.text {
				t.Errorf("after Resolve: ForModel() = %q; want %q", got, tc.text)
			}
			if runs != 1 {
				t.Errorf("tool runs = %d; want 1 (never ran again)", runs)
			}
			if tc.status == harness.Failed {
				var oe *harness.OutcomeError
				if !errors.As(again.Err, &oe) {
					t.Fatalf("after Resolve: Err = %v (%T); want an *OutcomeError", again.Err, again.Err)
				}
				if oe.Class != retryclass.Terminal {
					t.Errorf("OutcomeError.Class = %v; want %v", oe.Class, retryclass.Terminal)
				}
			}
		})
	}
}

// The tool answered but its outcome could not be recorded (the journal
// failed under it): the call says unknown, not executed, since a restart
// would not know; the output is kept for the caller.
func TestOutcomeNotRecordedIsUnknown(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	mustRegister(t, h, harness.Tool{Name: "pay", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			go st.Close() // the journal goes away while the tool runs
			for {
				if _, err := st.Get(context.Background(), uuid.New()); errors.Is(err, journal.ErrClosed) {
					return json.RawMessage(`"paid"`), nil
				}
				time.Sleep(time.Millisecond)
			}
		}})
	res := mustCall(t, h, call("pay", `{"amount":1}`))
	if res.Status != harness.Unknown {
		t.Errorf("Status = %v; want %v", res.Status, harness.Unknown)
	}
	if got, want := string(res.Output), `"paid"`; got != want {
		t.Errorf("Output = %s; want %s", got, want)
	}
	if !errors.Is(res.Err, journal.ErrClosed) {
		t.Errorf("Err = %v; want journal.ErrClosed", res.Err)
	}
	if got := res.ForModel(); !strings.Contains(got, "unknown") {
		t.Errorf("ForModel() = %q; want it to say unknown", got)
	}
}
