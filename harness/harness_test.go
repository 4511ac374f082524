package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
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
	key, _ := harness.KeyFromContext(ctx)
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

func openBolt(t *testing.T, path string, opts *journal.Options) *journal.BoltStore {
	t.Helper()
	st, err := journal.OpenBolt(path, opts)
	require.NoError(t, err)
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

func tempJournal(t *testing.T) (string, *journal.BoltStore) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	st := openBolt(t, path, nil)
	t.Cleanup(func() { st.Close() })
	return path, st
}

func call(tool, input string) harness.Call {
	return harness.Call{Tenant: "acme", Session: "s1", Turn: "1", Tool: tool, Input: json.RawMessage(input)}
}

func echoOutput(key uuid.UUID, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"charge":"ch_%s","n":%d}`, key.String()[:8], n))
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
	require.NoError(t, h.Register(harness.Tool{Name: "charge_card", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := harness.KeyFromContext(ctx)
			att, _ := harness.AttemptFromContext(ctx)
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
		}}))

	res, err := h.Call(context.Background(), call("charge_card", `{"amount":4900,"currency":"usd"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Executed, res.Status, "status")
	require.Equal(t, 2, calls, "tool calls")
	require.Equal(t, 2, res.Attempts, "attempts")
	require.Equal(t, 1, down.all(), "side effects downstream")
	require.Equal(t, keysSeen[0], keysSeen[1], "the retry must carry the same key")
	require.NotEqual(t, attemptsSeen[0], attemptsSeen[1], "each attempt has its own id")
	require.JSONEq(t, string(firstResult[res.Key]), string(res.Output))

	rec, err := st.Get(context.Background(), res.Key)
	require.NoError(t, err)
	require.Equal(t, journal.StateSucceeded, rec.State)
	require.Len(t, rec.Attempts, 2)
	require.Equal(t, retryclass.MaybeExecuted.String(), rec.Attempts[0].Class)
}

// Behaviour 2: parallel duplicates, in one CallAll and across goroutines,
// make one execution; everyone gets the result.
func TestParallelDuplicatesCollapse(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var down effects
	release := make(chan struct{})
	require.NoError(t, h.Register(harness.Tool{Name: "send", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			<-release
			key := down.do(ctx)
			return echoOutput(key, 1), nil
		}}))

	t.Run("CallAll", func(t *testing.T) {
		close(release)
		calls := []harness.Call{
			call("send", `{"to":"a@example.com","body":"hi"}`),
			call("send", `{"body":"hi", "to":"a@example.com"}`), // same intent, other spelling
			call("send", `{"to":"b@example.com","body":"hi"}`),
			call("send", `{"to":"a@example.com","body":"hi"}`),
		}
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%d", i)
		}
		res := h.CallAll(context.Background(), calls)
		require.Len(t, res, 4)
		for i, r := range res {
			require.Equal(t, calls[i].ID, r.CallID, "results come back in order")
			require.True(t, r.OK(), "result %d: %v", i, r.Err)
		}
		require.Equal(t, harness.Executed, res[0].Status)
		require.Equal(t, harness.Collapsed, res[1].Status)
		require.Equal(t, harness.Executed, res[2].Status)
		require.Equal(t, harness.Collapsed, res[3].Status)
		require.Equal(t, res[0].Key, res[1].Key)
		require.Equal(t, res[0].Key, res[3].Key)
		require.NotEqual(t, res[0].Key, res[2].Key)
		require.Equal(t, 1, down.count(res[0].Key))
		require.Equal(t, 2, down.all())
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
				r, err := h.Call(context.Background(), call("send", `{"to":"c@example.com","body":"race"}`))
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			}()
		}
		wg.Wait()
		require.Equal(t, before+1, down.all(), "one execution for %d racing calls", n)
		executed := 0
		for _, r := range results {
			require.True(t, r.OK())
			require.Equal(t, results[0].Output, r.Output)
			if r.Status == harness.Executed {
				executed++
			}
		}
		require.Equal(t, 1, executed, "exactly one caller executed; the rest were collapsed or replayed")
	})
}

// Behaviour 3: the same intent re-issued after success is replayed, in
// the same process and after reopening the journal, with the same model
// text.
func TestReplayAfterSuccessAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	var down effects
	tool := harness.Tool{Name: "charge_card", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key := down.do(ctx)
			return echoOutput(key, down.all()), nil
		}}
	c := call("charge_card", `{"amount":4900,"currency":"usd"}`)

	h, err := harness.Open(context.Background(), path, &harness.Options{Retry: fastRetry})
	require.NoError(t, err)
	require.NoError(t, h.Register(tool))
	first, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Executed, first.Status)
	again, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Replayed, again.Status)
	require.True(t, again.FromJournal)
	require.Equal(t, first.ForModel(), again.ForModel())
	require.NoError(t, h.Close())

	h2, err := harness.Open(context.Background(), path, &harness.Options{Retry: fastRetry})
	require.NoError(t, err)
	defer h2.Close()
	require.NoError(t, h2.Register(tool))
	after, err := h2.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Replayed, after.Status)
	require.Equal(t, first.Key, after.Key)
	require.JSONEq(t, string(first.Output), string(after.Output))
	require.Equal(t, first.ForModel(), after.ForModel())
	require.Equal(t, 1, down.all(), "side effects")
}

// Behaviour 4: 409 is waited out within the in-flight budget, then
// suppressed; 422 is suppressed at once; re-issues get the recorded
// suppression; altered input after a suppression is refused too.
func TestSuppression(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var tries409, tries422 atomic.Int32
	require.NoError(t, h.Register(
		harness.Tool{Name: "busy", Effect: harness.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				tries409.Add(1)
				return nil, &retryclass.StatusError{Status: 409}
			}},
		harness.Tool{Name: "mismatch", Effect: harness.Keyed,
			Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				tries422.Add(1)
				return nil, &retryclass.StatusError{Status: 422}
			}},
	))
	ctx := context.Background()

	r409, err := h.Call(ctx, call("busy", `{"order":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, r409.Status)
	require.Greater(t, tries409.Load(), int32(1), "409 is waited out with retries under the same key")
	var oe *harness.OutcomeError
	require.ErrorAs(t, r409.Err, &oe)
	require.Equal(t, retryclass.InFlight, oe.Class)

	r422, err := h.Call(ctx, call("mismatch", `{"order":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, r422.Status)
	require.Equal(t, int32(1), tries422.Load(), "422 stops at once")

	// The model re-issues both: the mismatch is a recorded suppression and
	// the tool does not run; the in-flight suppression is not a final answer,
	// so its re-issue asks the downstream again (still 409: suppressed).
	n409, n422 := tries409.Load(), tries422.Load()
	again, err := h.Call(ctx, call("mismatch", `{"order":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, again.Status)
	require.True(t, again.FromJournal)
	require.Equal(t, r422.ForModel(), again.ForModel())
	again409, err := h.Call(ctx, call("busy", `{"order":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, again409.Status)
	require.Greater(t, tries409.Load(), n409, "a re-issue of an in-flight suppression asks the downstream again")
	n409 = tries409.Load()

	// The model alters the input to dodge the key: refused, not run.
	dodge, err := h.Call(ctx, call("mismatch", `{"order":1,"note":"try again"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, dodge.Status)
	require.Equal(t, n409, tries409.Load())
	require.Equal(t, n422, tries422.Load())

	// A new user turn is a new intent: the guard does not reach it.
	next := call("mismatch", `{"order":1,"note":"try again"}`)
	next.Turn = "2"
	_, err = h.Call(ctx, next)
	require.NoError(t, err)
	require.Equal(t, n422+1, tries422.Load())

	// The caller (not the model) can switch the guard off.
	h2 := newHarness(t, st, &harness.Options{Guard: journal.GuardOff})
	require.NoError(t, h2.Register(harness.Tool{Name: "mismatch", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			tries422.Add(1)
			return json.RawMessage(`{}`), nil
		}}))
	free, err := h2.Call(ctx, call("mismatch", `{"order":1,"note":"operator retry"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Executed, free.Status)
}

// Behaviour 5: retryable failures retry with backoff under the same key,
// a new attempt id each time, each attempt recorded before it runs; an
// Unkeyed maybe-executed failure is not retried.
func TestRetriesRecordEachAttemptFirst(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var attempts []string
	var recorded []int
	require.NoError(t, h.Register(harness.Tool{Name: "flaky", Effect: harness.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := harness.KeyFromContext(ctx)
			id, _ := harness.AttemptFromContext(ctx)
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
		}}))
	res, err := h.Call(context.Background(), call("flaky", `{}`))
	require.NoError(t, err)
	require.Equal(t, harness.Executed, res.Status)
	require.Equal(t, 3, res.Attempts)
	require.Equal(t, []int{1, 2, 3}, recorded, "attempt n is in the journal before it runs")
	require.Len(t, map[string]bool{attempts[0]: true, attempts[1]: true, attempts[2]: true}, 3)

	var runs int
	require.NoError(t, h.Register(harness.Tool{Name: "email", Effect: harness.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			return nil, errors.New("read: connection reset by peer")
		}}))
	res, err = h.Call(context.Background(), call("email", `{"to":"x"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Unknown, res.Status)
	require.Equal(t, 1, runs, "an Unkeyed maybe-executed failure is never retried")
	again, err := h.Call(context.Background(), call("email", `{"to":"x"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Unknown, again.Status)
	require.Equal(t, 1, runs, "and never re-run by a re-issue")
}

func TestUnkeyedReconcile(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	sent := map[uuid.UUID]bool{}
	runs := 0
	require.NoError(t, h.Register(harness.Tool{Name: "email", Effect: harness.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			key, _ := harness.KeyFromContext(ctx)
			if runs == 1 {
				sent[key] = true // sent, but the answer is lost
				return nil, errors.New("read: connection reset by peer")
			}
			return json.RawMessage(`"sent"`), nil
		},
		Reconcile: func(ctx context.Context, key uuid.UUID, in json.RawMessage) (json.RawMessage, bool, error) {
			if sent[key] {
				return json.RawMessage(`"sent (reconciled)"`), true, nil
			}
			return nil, false, nil
		}}))
	res, err := h.Call(context.Background(), call("email", `{"to":"x"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Executed, res.Status)
	require.Equal(t, `"sent (reconciled)"`, string(res.Output))
	require.Equal(t, 1, runs)
}

// Behaviour 6: a crash leaves a pending record with an expired lease.
func TestTakeoverAfterCrash(t *testing.T) {
	for _, effect := range []harness.Effect{harness.Keyed, harness.Idempotent, harness.Unkeyed} {
		t.Run(effect.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.journal")
			st := openBolt(t, path, nil)
			var down effects
			input := `{"amount":100}`
			// The dead process: begins the intent and dies before completing.
			h1 := harness.New(st, &harness.Options{Owner: "dead"})
			var key uuid.UUID
			require.NoError(t, h1.Register(harness.Tool{Name: "pay", Effect: effect,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					key = down.do(ctx)
					runtime.Goexit()
					return nil, nil
				}}))
			// Goexit ends the calling goroutine too, as a crash would.
			returned := make(chan bool)
			go func() {
				defer func() { recover(); returned <- false }()
				h1.Call(context.Background(), call("pay", input))
				returned <- true
			}()
			require.False(t, <-returned, "the caller's goroutine ended with the tool's")
			rec, err := st.Get(context.Background(), key)
			require.NoError(t, err)
			require.Equal(t, journal.StatePending, rec.State)
			require.NoError(t, st.Close())

			// The restarted process: the reopened journal's leases are dead.
			st2 := openBolt(t, path, nil)
			defer st2.Close()
			h2 := newHarness(t, st2, nil)
			require.NoError(t, h2.Register(harness.Tool{Name: "pay", Effect: effect,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					k := down.do(ctx)
					require.Equal(t, key, k, "a re-run carries the same key")
					return json.RawMessage(`"paid"`), nil
				}}))
			res, err := h2.Call(context.Background(), call("pay", input))
			require.NoError(t, err)
			if effect == harness.Unkeyed {
				require.Equal(t, harness.Unknown, res.Status, "Unkeyed without Reconcile is never re-run silently")
				require.Equal(t, 1, down.all())
				again, err := h2.Call(context.Background(), call("pay", input))
				require.NoError(t, err)
				require.Equal(t, harness.Unknown, again.Status)
				require.Equal(t, 1, down.all())
				return
			}
			require.Equal(t, harness.Executed, res.Status)
			require.Equal(t, 2, down.count(key), "re-run under the same key: a keyed downstream absorbs it")
		})
	}
}

// Behaviour 7: the same explicit step key with a different input.
func TestStepKeyMismatch(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var down effects
	require.NoError(t, h.Register(harness.Tool{Name: "ship", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			down.do(ctx)
			return json.RawMessage(`"shipped"`), nil
		}}))
	c := call("ship", `{"sku":"A","qty":1}`)
	c.StepKey = "order-77/ship"
	first, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Executed, first.Status)
	c.Input = json.RawMessage(`{"sku":"A","qty":2}`)
	second, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Suppressed, second.Status)
	require.Equal(t, first.Key, second.Key)
	require.Equal(t, 1, down.all())
	var oe *harness.OutcomeError
	require.ErrorAs(t, second.Err, &oe)
	require.Equal(t, retryclass.Mismatch, oe.Class)
	rec, err := st.Get(context.Background(), first.Key)
	require.NoError(t, err)
	require.Equal(t, journal.StateSucceeded, rec.State, "the first intent's record is untouched")
}

// Behaviour 8: a panicking tool.
func TestPanic(t *testing.T) {
	for _, tc := range []struct {
		effect harness.Effect
		status harness.Status
		state  journal.State
	}{
		{harness.Keyed, harness.Unknown, journal.StateUnknown},
		{harness.Unkeyed, harness.Unknown, journal.StateUnknown},
		{harness.Idempotent, harness.Failed, journal.StateFailed},
	} {
		t.Run(tc.effect.String(), func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			runs := 0
			require.NoError(t, h.Register(harness.Tool{Name: "boom", Effect: tc.effect,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					runs++
					panic("nil map write")
				}}))
			res, err := h.Call(context.Background(), call("boom", `{}`))
			require.NoError(t, err)
			require.Equal(t, tc.status, res.Status)
			require.Equal(t, 1, runs, "a panic is not retried")
			var pe *harness.PanicError
			require.ErrorAs(t, res.Err, &pe)
			require.Equal(t, "nil map write", pe.Value)
			require.Contains(t, string(pe.Stack), "harness_test")
			rec, err := st.Get(context.Background(), res.Key)
			require.NoError(t, err)
			require.Equal(t, tc.state, rec.State)
		})
	}
}

// Behaviour 9: bad input is rejected; nothing recorded, tool not run.
func TestRejectedCalls(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, &harness.Options{})
	runs := 0
	require.NoError(t, h.Register(harness.Tool{Name: "t", Effect: harness.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`1`), nil
		}}))
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
	for _, tc := range []struct {
		name  string
		c     harness.Call
		check func(t *testing.T, err error)
	}{
		{"invalid JSON", call("t", `{"amount":}`), func(t *testing.T, err error) {
			require.ErrorIs(t, err, harness.ErrInvalidInput)
			require.Contains(t, err.Error(), "offset")
		}},
		{"oversize", call("t", string(big)), func(t *testing.T, err error) { require.ErrorIs(t, err, harness.ErrInvalidInput) }},
		{"too deep", call("t", deep), func(t *testing.T, err error) { require.ErrorIs(t, err, harness.ErrInvalidInput) }},
		{"unknown tool", call("nope", `{}`), func(t *testing.T, err error) {
			var ute *harness.UnknownToolError
			require.ErrorAs(t, err, &ute)
			require.Equal(t, "nope", ute.Tool)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.Call(context.Background(), tc.c)
			require.Error(t, err)
			require.Equal(t, harness.Rejected, res.Status)
			tc.check(t, err)
		})
	}
	stats, err := st.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, stats.Records, "nothing recorded")
	require.Equal(t, 0, runs, "tool not run")

	require.NoError(t, h.Close())
	_, err = h.Call(context.Background(), call("t", `{}`))
	require.ErrorIs(t, err, harness.ErrClosed)

	// A journal that fails: closed under the harness.
	h2 := newHarness(t, st, nil)
	require.NoError(t, h2.Register(harness.Tool{Name: "t", Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		runs++
		return nil, nil
	}}))
	require.NoError(t, st.Close())
	res, err := h2.Call(context.Background(), call("t", `{}`))
	require.ErrorIs(t, err, journal.ErrClosed)
	require.Equal(t, harness.Rejected, res.Status)
	require.Equal(t, 0, runs)
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
	require.NoError(t, h.Register(harness.Tool{Name: "pay", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			down.do(ctx)
			return json.RawMessage(`"paid"`), nil
		}}))
	c := call("pay", `{"amount":1}`)
	r1, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Executed, r1.Status)
	mu.Lock()
	now = now.Add(59 * time.Minute)
	mu.Unlock()
	r2, _ := h.Call(context.Background(), c)
	require.Equal(t, harness.Replayed, r2.Status)
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	r3, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Executed, r3.Status, "past its TTL the record is gone and the call runs anew")
	require.Equal(t, 2, down.all())
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
	require.NoError(t, h.Register(harness.Typed("charge", harness.Keyed, func(ctx context.Context, i in) (out, error) {
		return out{ID: fmt.Sprintf("%d-%s", i.Amount, i.Currency)}, nil
	})))
	res, err := h.Call(context.Background(), call("charge", `{"amount":5,"currency":"eur"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"5-eur"}`, string(res.Output))

	bad, err := h.Call(context.Background(), call("charge", `{"amount":5,"currncy":"eur"}`))
	require.NoError(t, err)
	require.Equal(t, harness.Failed, bad.Status, "a typo the model can correct is a terminal failure")
	require.Contains(t, bad.ForModel(), "currncy")
}

func TestRegisterErrors(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	fn := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return nil, nil }
	require.ErrorIs(t, h.Register(harness.Tool{Func: fn}), harness.ErrToolName)
	require.NoError(t, h.Register(harness.Tool{Name: "a", Func: fn}))
	require.ErrorIs(t, h.Register(harness.Tool{Name: "b", Func: fn}, harness.Tool{Name: "a", Func: fn}), harness.ErrDuplicateTool)
	_, err := h.Call(context.Background(), call("b", `{}`))
	var ute *harness.UnknownToolError
	require.ErrorAs(t, err, &ute, "a failed Register adds none of its tools")
	require.Error(t, h.Register(harness.Tool{Name: "c"}), "nil Func")
	require.Error(t, h.Register(harness.Tool{Name: "d", Func: fn, Schema: json.RawMessage(`{"type":`)}), "bad schema")
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
	require.NoError(t, h.Register(harness.Tool{Name: "tokenize", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"card":"4242424242424242"}`), nil
		}}))
	c := call("tokenize", `{"pan":"4242424242424242"}`)
	first, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.JSONEq(t, `{"card":"4242424242424242"}`, string(first.Output), "the executing caller gets the real output")
	rec, err := st.Get(context.Background(), first.Key)
	require.NoError(t, err)
	require.Nil(t, rec.Input, "no raw input in the journal")
	require.False(t, rec.Fingerprint.IsZero(), "the fingerprint is kept")
	require.JSONEq(t, `{"card":"****"}`, string(rec.Output))
	again, err := h.Call(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, harness.Replayed, again.Status)
	require.JSONEq(t, `{"card":"****"}`, string(again.Output), "a replay answers with what was stored")
}

// Outcomes that a re-issue may run again: a failure that provably did not
// execute (its retry budget ran out on refusals), and an unknown outcome of
// a Keyed tool, whose downstream absorbs the repeat under the same key.
// An Unkeyed unknown is never run again (TestRetriesRecordEachAttemptFirst).
func TestReissueRunsWhatMayRunAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		effect  harness.Effect
		fail    error
		status  harness.Status
		attempt int // attempts of the first call
	}{
		{"not-executed failure", harness.Unkeyed, retryclass.MarkNotExecuted(errors.New("connection refused")), harness.Failed, 4},
		{"keyed unknown", harness.Keyed, errors.New("read: connection reset by peer"), harness.Unknown, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			failing := true
			var keys []uuid.UUID
			require.NoError(t, h.Register(harness.Tool{Name: "op", Effect: tc.effect,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					k, _ := harness.KeyFromContext(ctx)
					keys = append(keys, k)
					if failing {
						return nil, tc.fail
					}
					return json.RawMessage(`"done"`), nil
				}}))
			c := call("op", `{"x":1}`)
			first, err := h.Call(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, tc.status, first.Status)
			require.Len(t, keys, tc.attempt, "the retry budget (4 tries) was spent")

			failing = false
			again, err := h.Call(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, harness.Executed, again.Status, "the re-issue runs")
			require.Len(t, keys, tc.attempt+1)
			require.Equal(t, keys[0], keys[len(keys)-1], "under the same key")
			require.Equal(t, tc.attempt+1, again.Attempts, "the journal keeps every attempt")

			third, err := h.Call(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, harness.Replayed, third.Status, "and once it succeeded it is answered from the journal")
			require.Len(t, keys, tc.attempt+1)
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
			harness.Replayed, `{"sent":true}`},
		{"failed", journal.Resolution{State: journal.StateFailed, Reason: "provider never received it", By: "ops"},
			harness.Failed, "The tool failed and nothing was done: provider never received it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := tempJournal(t)
			h := newHarness(t, st, nil)
			runs := 0
			require.NoError(t, h.Register(harness.Tool{Name: "email", Effect: harness.Unkeyed,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					runs++
					return nil, errors.New("read: connection reset by peer")
				}}))
			c := call("email", `{"to":"x"}`)
			first, err := h.Call(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, harness.Unknown, first.Status)

			_, err = st.Resolve(context.Background(), first.Key, tc.res)
			require.NoError(t, err)
			again, err := h.Call(context.Background(), c)
			require.NoError(t, err)
			require.Equal(t, tc.status, again.Status)
			require.Equal(t, tc.text, again.ForModel())
			require.Equal(t, 1, runs, "the tool never ran again")
			if tc.status == harness.Failed {
				var oe *harness.OutcomeError
				require.ErrorAs(t, again.Err, &oe)
				require.Equal(t, retryclass.Terminal, oe.Class)
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
	require.NoError(t, h.Register(harness.Tool{Name: "pay", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			go st.Close() // the journal goes away while the tool runs
			for {
				if _, err := st.Get(context.Background(), uuid.New()); errors.Is(err, journal.ErrClosed) {
					return json.RawMessage(`"paid"`), nil
				}
				time.Sleep(time.Millisecond)
			}
		}}))
	res, err := h.Call(context.Background(), call("pay", `{"amount":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Unknown, res.Status)
	require.Equal(t, `"paid"`, string(res.Output))
	require.ErrorIs(t, res.Err, journal.ErrClosed)
	require.Contains(t, res.ForModel(), "unknown")
}
