package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// The hammer's timings. The lease is shorter than a slow attempt, so an
// owner keeps its intent only by renewing; every tool's Timeout is shorter
// than the in-flight budget, so a caller waiting on another owner sees it
// finish.
const (
	hammerLease   = 120 * time.Millisecond
	hammerSlow    = hammerLease * 3 / 2
	hammerTimeout = 250 * time.Millisecond
	hammerSettle  = 100 * time.Millisecond
)

var hammerRetry = &retryclass.Policy{
	MaxAttempts:     20,
	InitialInterval: time.Millisecond,
	MaxInterval:     10 * time.Millisecond,
	MaxElapsed:      -1,
	InFlightBudget:  4 * time.Second,
}

// hammerTools are the tools of the hammer, one per effect kind (and an
// Unkeyed one without Reconcile); intent n calls hammerTools[n%4].
var hammerTools = []string{"unkeyed", "unkeyed-bare", "keyed", "idempotent"}

// callIDKey carries a call's number into the tool's context (the flight
// keeps its starter's context values), so the downstream knows on whose
// behalf an effect happened.
type callIDKey struct{}

// hammerDownstream is the fake downstream of the hammer's tools: it decides
// how each invocation fails and counts the effects that really happened.
// The Keyed tool's downstream deduplicates by key, as a payment API does (a
// repeat gets the stored answer, a request while one runs gets 409), so
// only its first execution counts; the Unkeyed ones do whatever they are
// asked; the Idempotent one is an upsert.
type hammerDownstream struct {
	clock atomic.Int64 // orders effects and call starts

	mu       sync.Mutex // guards every field below
	invoked  map[uuid.UUID]int
	effects  map[uuid.UUID][]int64 // when each real execution happened
	outputs  map[uuid.UUID]map[string]bool
	stored   map[uuid.UUID]json.RawMessage // the Keyed downstream's answers
	running  map[uuid.UUID]bool            // a Keyed request is being processed
	executed map[int]bool                  // calls whose flight executed an effect
	serial   int
}

func newHammerDownstream() *hammerDownstream {
	return &hammerDownstream{
		invoked: map[uuid.UUID]int{}, effects: map[uuid.UUID][]int64{}, outputs: map[uuid.UUID]map[string]bool{},
		stored: map[uuid.UUID]json.RawMessage{}, running: map[uuid.UUID]bool{}, executed: map[int]bool{},
	}
}

// effect records one real execution for key and returns its output.
func (d *hammerDownstream) effect(ctx context.Context, key uuid.UUID, idempotent bool) json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.serial++
	out := json.RawMessage(fmt.Sprintf(`{"key":%q,"exec":%d}`, key, d.serial))
	if idempotent {
		out = json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))
	}
	d.effects[key] = append(d.effects[key], d.clock.Add(1))
	if d.outputs[key] == nil {
		d.outputs[key] = map[string]bool{}
	}
	d.outputs[key][string(out)] = true
	if id, ok := ctx.Value(callIDKey{}).(int); ok {
		d.executed[id] = true
	}
	return out
}

// tool returns the Func of the tool named name.
func (d *hammerDownstream) tool(name string) harness.Func {
	return func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		key, _ := downstream.KeyFromContext(ctx)
		d.mu.Lock()
		d.invoked[key]++
		first := d.invoked[key] == 1
		d.mu.Unlock()
		var n int
		if err := json.Unmarshal(in, &struct{ N *int }{&n}); err != nil {
			return nil, retryclass.Permanent(err)
		}
		// The first invocation of two intents of every tool crashes,
		// before or after its effect, so that later callers meet a
		// pending record whose owner stopped renewing; the rest fail at
		// random.
		mode := rand.IntN(7)
		switch {
		case first && n/4 == 0:
			mode = 7
		case first && n/4 == 1:
			mode = 8
		}
		switch mode {
		case 2:
			return nil, retryclass.MarkNotExecuted(errors.New("dial tcp: connection refused"))
		case 8:
			// A crash of the owner: the record stays pending and its lease
			// is no longer renewed.
			runtime.Goexit()
		}
		var out json.RawMessage
		if name == "keyed" {
			var err error
			if out, err = d.keyed(ctx, key, mode == 1); err != nil {
				return nil, err
			}
		} else {
			// Like a real server, the downstream drops a request whose
			// client gave up before it got to it.
			if mode == 1 && !sleepCtx(ctx, hammerSlow) {
				return nil, ctx.Err()
			}
			out = d.effect(ctx, key, name == "idempotent")
		}
		switch mode {
		case 3:
			return nil, errors.New("read tcp: connection reset by peer") // the answer was lost
		case 4:
			<-ctx.Done() // the answer never comes: the attempt times out
			return nil, ctx.Err()
		case 5:
			time.Sleep(hammerSlow)
			return nil, errors.New("read tcp: i/o timeout")
		case 7:
			runtime.Goexit()
		}
		return out, nil
	}
}

// keyed is the deduplicating downstream: the first request for key executes
// (slowly if slow), a request while it runs is refused with 409, and a
// repeat gets the stored answer without a second execution.
func (d *hammerDownstream) keyed(ctx context.Context, key uuid.UUID, slow bool) (json.RawMessage, error) {
	d.mu.Lock()
	if out, ok := d.stored[key]; ok {
		d.mu.Unlock()
		return out, nil
	}
	if d.running[key] {
		d.mu.Unlock()
		return nil, &retryclass.StatusError{Method: "POST", URL: "https://pay.test/charges", Status: 409, Keyed: true}
	}
	d.running[key] = true
	d.mu.Unlock()
	if slow && !sleepCtx(ctx, hammerSlow) {
		d.mu.Lock()
		d.running[key] = false
		d.mu.Unlock()
		return nil, ctx.Err()
	}
	out := d.effect(ctx, key, false)
	d.mu.Lock()
	d.stored[key], d.running[key] = out, false
	d.mu.Unlock()
	return out, nil
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reconcile answers "did key K happen?" from the downstream's own record.
func (d *hammerDownstream) reconcile(_ context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
	d.mu.Lock()
	defer d.mu.Unlock()
	for out := range d.outputs[key] {
		return downstream.Happened(json.RawMessage(out))
	}
	return downstream.DidNotHappen()
}

// effectsBefore counts key's real executions that happened before t.
func (d *hammerDownstream) effectsBefore(key uuid.UUID, t int64) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, at := range d.effects[key] {
		if at < t {
			n++
		}
	}
	return n
}

// hammerAnswer is one call's answer with what the test knew when it began.
type hammerAnswer struct {
	id    int
	n     int
	start int64 // the downstream's clock when the call began
	res   harness.Result
	died  bool // the call's goroutine ended with its tool's (a crash)
}

// TestHammer: several Harnesses over one journal (the same bbolt store,
// or separate PostgreSQL clients of one schema) make many calls of few
// intents of every effect kind, while the downstream loses answers, times
// out after the effect, runs slower than the lease, refuses before
// sending, and crashes its owner; a fifth of the callers leave early.
// Invariants: an Unkeyed intent's effect happens at most once, as does the
// Keyed downstream's real execution; a success answers with the output of
// an effect that happened; "failed" or "rejected" is never said of an
// intent whose effect had already happened when the call began, and no
// rejected call ran an effect.
func TestHammer(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		_, st := tempJournal(t)
		hammer(t, []journal.Store{st, st, st})
	})
	t.Run("postgres", func(t *testing.T) {
		st := probePG(t, "", nil)
		schema := st.Schema()
		hammer(t, []journal.Store{st, probePG(t, schema, nil), probePG(t, schema, nil)})
	})
}

func hammer(t *testing.T, stores []journal.Store) {
	down := newHammerDownstream()
	var inFlight, takeovers atomic.Int64
	obs := harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		switch e.Kind {
		case harness.EventInFlight:
			inFlight.Add(1)
		case harness.EventTakeover:
			takeovers.Add(1)
		}
	})
	hs := make([]*harness.Harness, len(stores))
	for i, st := range stores {
		hs[i] = newHarness(t, st, &harness.Options{LeaseTTL: hammerLease, Retry: hammerRetry, Observer: obs})
		for _, name := range hammerTools {
			tool := harness.Tool{Name: name, Func: down.tool(name), Timeout: hammerTimeout}
			switch name {
			case "unkeyed":
				tool.Effect, tool.Reconcile, tool.Settle = journal.Unkeyed, down.reconcile, hammerSettle
			case "unkeyed-bare":
				tool.Effect, tool.Settle = journal.Unkeyed, hammerSettle
			case "keyed":
				tool.Effect = journal.Keyed
			case "idempotent":
				tool.Effect = journal.Idempotent
			}
			mustRegister(t, hs[i], tool)
		}
	}

	const workersPer, perWorker, intents = 5, 16, 24
	var ids atomic.Int64
	var mu sync.Mutex
	var answers []hammerAnswer
	doCall := func(h *harness.Harness, n int, leave bool) hammerAnswer {
		a := hammerAnswer{id: int(ids.Add(1)), n: n, start: down.clock.Add(1)}
		ctx := context.WithValue(context.Background(), callIDKey{}, a.id)
		if leave {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(150))*time.Millisecond)
			defer cancel()
		}
		c := call(hammerTools[n%4], fmt.Sprintf(`{"n":%d}`, n))
		a.died = true
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.res = h.Call(ctx, c)
			a.died = false
		}()
		<-done
		return a
	}
	var wg sync.WaitGroup
	for _, h := range hs {
		for range workersPer {
			wg.Go(func() {
				for range perWorker {
					a := doCall(h, rand.IntN(intents), rand.IntN(5) == 0)
					mu.Lock()
					answers = append(answers, a)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	// Every intent once more, from every Harness in turn, with a caller
	// that waits: pending records of crashed owners are taken over now.
	for n := range intents {
		for range 3 { // a first invocation may crash again
			a := doCall(hs[n%len(hs)], n, false)
			answers = append(answers, a)
			if !a.died {
				break
			}
		}
	}

	keys := map[uuid.UUID]int{}
	for _, a := range answers {
		if a.died {
			continue
		}
		r := a.res
		keys[r.Key] = a.n
		desc := fmt.Sprintf("call %d (intent %d, %s)", a.id, a.n, hammerTools[a.n%4])
		down.mu.Lock()
		outputs, executed := down.outputs[r.Key], down.executed[a.id]
		down.mu.Unlock()
		switch r.Status {
		case harness.Succeeded:
			if !outputs[string(r.Output)] {
				t.Errorf("%s = succeeded with %s; want the output of an effect that happened (%v)", desc, r.Output, outputs)
			}
		case harness.Failed:
			if n := down.effectsBefore(r.Key, a.start); n > 0 {
				t.Errorf("%s = failed (%s); want no failure: %d effects had happened before the call", desc, describe(r), n)
			}
		case harness.Rejected:
			if n := down.effectsBefore(r.Key, a.start); n > 0 || executed {
				t.Errorf("%s = rejected (%s); want no rejection: %d effects before the call, ran one itself: %v", desc, describe(r), n, executed)
			}
		case harness.Suppressed:
			if oe, ok := r.Err.(*harness.OutcomeError); !ok || oe.Class != retryclass.InFlight {
				t.Errorf("%s = %s; want suppressed only as in flight (nothing here is a mismatch)", desc, describe(r))
			}
		case harness.Unknown, harness.InProgress:
		default:
			t.Errorf("%s = %s; want a known status", desc, describe(r))
		}
	}
	for key, n := range keys {
		tool := hammerTools[n%4]
		down.mu.Lock()
		got := len(down.effects[key])
		down.mu.Unlock()
		if tool != "idempotent" && got > 1 {
			t.Errorf("real executions of intent %d (%s, key %s) = %d; want at most 1", n, tool, key, got)
		}
	}
	if len(keys) != intents {
		t.Errorf("intents answered = %d; want %d", len(keys), intents)
	}
	// The paths this test exists for must have been taken.
	if inFlight.Load() == 0 {
		t.Errorf("in-flight waits = 0; want some (an intent held by another Harness)")
	}
	if takeovers.Load() == 0 {
		t.Errorf("takeovers = 0; want some (an intent whose owner crashed)")
	}
}
