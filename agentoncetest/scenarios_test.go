package agentoncetest_test

// The scenarios of docs/design.md, "What the tests prove", run through
// the kit: a real harness on a real bbolt journal, a loopback Downstream,
// the FaultTransport under the harness's Transport. The crash matrix runs
// in examples/llm-agent (TestCrashMatrix), where the process really dies.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// fastRetry keeps the scenarios quick; nothing here asserts a timing.
var fastRetry = &retryclass.Policy{
	MaxAttempts: 6, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond,
	MaxRetryAfter: time.Millisecond, InFlightBudget: 200 * time.Millisecond,
}

// rig is a harness with one Keyed tool, charge, that POSTs its input to a
// Downstream through the FaultTransport.
type rig struct {
	h      *harness.Harness
	srv    *agentoncetest.Server
	faults *agentoncetest.FaultTransport
	runs   atomic.Int64 // calls of the tool function
}

type rigOptions struct {
	srv        *agentoncetest.Server // nil: a new Downstream on handler
	timeout    time.Duration         // the tool's timeout; zero: 300ms
	handler    http.Handler
	downstream *agentoncetest.DownstreamOptions
	faults     *agentoncetest.FaultOptions
	store      journal.Store // nil: a bbolt journal in t.TempDir()
	harness    *harness.Options
	volatile   []string
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	if o.handler == nil {
		o.handler = &charges{}
	}
	if o.timeout == 0 {
		o.timeout = 300 * time.Millisecond
	}
	r := &rig{srv: o.srv}
	if r.srv == nil {
		r.srv = agentoncetest.NewServer(t, o.handler, o.downstream)
	}
	r.faults = agentoncetest.NewFaultTransport(r.srv.Client().Transport, o.faults)
	client := &http.Client{Transport: &downstream.Transport{Base: r.faults}}
	hopts := o.harness
	if hopts == nil {
		hopts = &harness.Options{}
	}
	if hopts.Retry == nil {
		hopts.Retry = fastRetry
	}
	if o.store != nil {
		r.h = harness.New(o.store, hopts)
	} else {
		var err error
		r.h, err = agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), &agentonce.OpenOptions{Options: *hopts})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { r.h.Close() })
	err := r.h.Register(harness.Tool{
		Name: "charge", Effect: journal.Keyed, Volatile: o.volatile, Timeout: o.timeout,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			r.runs.Add(1)
			req, err := http.NewRequestWithContext(ctx, "POST", r.srv.URL+"/charges", bytesReader(in))
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if err := retryclass.ResponseError(resp); err != nil {
				return nil, err
			}
			b, err := io.ReadAll(resp.Body)
			return json.RawMessage(b), err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func bytesReader(b []byte) io.Reader { return &byteReader{b: b} }

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func charge(id, input string) harness.ToolCall {
	return harness.ToolCall{ID: id, Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge", Input: json.RawMessage(input)}
}

func call(t *testing.T, h *harness.Harness, c harness.ToolCall) harness.Result {
	t.Helper()
	res := h.Call(context.Background(), c)
	if res.Status == harness.Rejected {
		t.Fatalf("Call(%s %s): %v", c.Tool, c.Input, res.Err)
	}
	return res
}

// The downstream commits but the answer is lost: the retry returns the
// first result and the downstream sees one effect.
func TestScenarioLostAnswer(t *testing.T) {
	for _, f := range []agentoncetest.Fault{agentoncetest.LoseResponse, agentoncetest.Delay, agentoncetest.ResetAfterSend, agentoncetest.Duplicate} {
		t.Run(f.String(), func(t *testing.T) {
			r := newRig(t, rigOptions{faults: &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{f}}})
			// A Delay outlasts the tool's own timeout (300ms).
			first := call(t, r.h, charge("c1", `{"cents":4900}`))
			agentoncetest.AssertStatus(t, harness.Executed, first)
			agentoncetest.AssertEffects(t, r.srv.Downstream, 1, first)
			agentoncetest.AssertNoDuplicates(t, r.srv.Downstream)
			if n := r.faults.Injected(f); n != 1 {
				t.Errorf("Injected(%v) = %d; want 1", f, n)
			}
			// The model re-issues the call: answered from the journal,
			// the same answer.
			again := call(t, r.h, charge("c2", `{"cents":4900}`))
			agentoncetest.AssertStatus(t, harness.Replayed, again)
			agentoncetest.AssertSameAnswer(t, first, again)
			agentoncetest.AssertEffects(t, r.srv.Downstream, 1, again)
		})
	}
}

// Two identical calls race, across goroutines and as parallel tool calls
// of one model response: one execution.
func TestScenarioRacingDuplicates(t *testing.T) {
	r := newRig(t, rigOptions{})
	calls := make([]harness.ToolCall, 8)
	for i := range calls {
		calls[i] = charge(fmt.Sprint("p", i), `{"cents":100}`)
	}
	res := r.h.CallAll(context.Background(), calls)
	agentoncetest.AssertStatuses(t, res, harness.Executed, harness.Collapsed, harness.Collapsed, harness.Collapsed,
		harness.Collapsed, harness.Collapsed, harness.Collapsed, harness.Collapsed)
	agentoncetest.AssertEffects(t, r.srv.Downstream, 1, res...)

	var wg sync.WaitGroup
	out := make([]harness.Result, 32)
	for i := range out {
		wg.Go(func() { out[i] = call(t, r.h, charge(fmt.Sprint("g", i), `{"cents":200}`)) })
	}
	wg.Wait()
	executed := 0
	for _, o := range out {
		switch {
		case o.OK() && o.Source == harness.Executed:
			executed++
		case o.OK() && (o.Source == harness.Collapsed || o.Source == harness.Replayed):
		default:
			t.Errorf("racing call %s: status %s (%v); want executed, collapsed or replayed", o.CallID, o.Status, o.Err)
		}
	}
	if executed != 1 {
		t.Errorf("%d of 32 racing calls executed; want 1", executed)
	}
	agentoncetest.AssertEffects(t, r.srv.Downstream, 1, out...)
	agentoncetest.AssertNoDuplicates(t, r.srv.Downstream)
	if n := r.runs.Load(); n != 2 {
		t.Errorf("tool ran %d times for two intents; want 2", n)
	}
}

// The same key with a different payload is suppressed and never run:
// locally (an explicit step key), and by the downstream's 422 when two
// agents of one fleet (one namespace, two journals) disagree on the body.
func TestScenarioKeyReuse(t *testing.T) {
	t.Run("step key", func(t *testing.T) {
		r := newRig(t, rigOptions{})
		a := charge("a", `{"cents":4900}`)
		a.StepKey = "order/A-1001"
		b := charge("b", `{"cents":5900}`)
		b.StepKey = "order/A-1001"
		first := call(t, r.h, a)
		second := call(t, r.h, b)
		agentoncetest.AssertStatus(t, harness.Executed, first)
		agentoncetest.AssertStatus(t, harness.Suppressed, second)
		if n := r.runs.Load(); n != 1 {
			t.Errorf("tool ran %d times; want 1 (the mismatch must not run)", n)
		}
	})
	t.Run("downstream 422", func(t *testing.T) {
		a, b := fleet(t, rigOptions{volatile: []string{"note"}})
		// "note" is volatile: one key for both agents, but each sends its
		// own wording downstream, and the downstream refuses the second.
		first := call(t, a.h, charge("a1", `{"cents":4900,"note":"first wording"}`))
		second := call(t, b.h, charge("b1", `{"cents":4900,"note":"second wording"}`))
		agentoncetest.AssertStatus(t, harness.Executed, first)
		agentoncetest.AssertStatus(t, harness.Suppressed, second)
		if first.Key != second.Key {
			t.Fatalf("keys %s and %s differ; the scenario needs one key", first.Key, second.Key)
		}
		checkSuppressionHolds(t, b, `{"cents":4900,"note":"third wording"}`, `{"cents":4800}`, false)
		agentoncetest.AssertEffects(t, a.srv.Downstream, 1, first)
		agentoncetest.AssertNoDuplicates(t, a.srv.Downstream)
	})
}

// fleet returns two agents of one fleet: one namespace, two journals, one
// downstream.
func fleet(t *testing.T, o rigOptions) (a, b *rig) {
	t.Helper()
	ns := uuid.New()
	dir := t.TempDir()
	open := func(name string) journal.Store {
		s, err := bolt.Open(filepath.Join(dir, name), &bolt.Options{Journal: journal.Options{Namespace: ns}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	o.store = open("a.db")
	a = newRig(t, o)
	o.store, o.srv = open("b.db"), a.srv
	b = newRig(t, o)
	return a, b
}

// checkSuppressionHolds checks, after r's intent was suppressed, that the
// model's re-issue (reissue) and an altered input (altered) are both
// suppressed. The altered input never runs the tool (the guard); the
// re-issue runs it only when reasks is set: an in-flight suppression is
// not final, so its re-issue asks the downstream again under the same key.
func checkSuppressionHolds(t *testing.T, r *rig, reissue, altered string, reasks bool) {
	t.Helper()
	before := r.runs.Load()
	again := call(t, r.h, charge("re-issue", reissue))
	asked := r.runs.Load() - before
	changed := call(t, r.h, charge("altered", altered))
	agentoncetest.AssertStatuses(t, []harness.Result{again, changed}, harness.Suppressed, harness.Suppressed)
	if !reasks && asked != 0 {
		t.Errorf("re-issue ran the tool %d times after the suppression; want 0", asked)
	}
	if reasks && asked == 0 {
		t.Errorf("re-issue of an in-flight suppression did not ask the downstream again")
	}
	if n := r.runs.Load() - before - asked; n != 0 {
		t.Errorf("altered input ran the tool %d times after the suppression; want 0", n)
	}
}

// 409: the same key is still processing at the downstream (another agent
// of the fleet is running it). The harness waits within its in-flight
// budget, then suppresses; the re-issue asks again (still in flight:
// suppressed) and an altered input does not run the tool. The first
// agent's charge then completes: one effect.
func TestScenarioInFlight409(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"charge":"ch_slow"}`))
	})
	a, b := fleet(t, rigOptions{handler: slow, timeout: 10 * time.Second})
	done := make(chan harness.Result)
	go func() {
		res := a.h.Call(context.Background(), charge("a1", `{"cents":1}`))
		done <- res
	}()
	<-started
	second := call(t, b.h, charge("b1", `{"cents":1}`))
	agentoncetest.AssertStatus(t, harness.Suppressed, second)
	var oe *harness.OutcomeError
	if !errors.As(second.Err, &oe) || oe.Class != retryclass.InFlight {
		t.Errorf("suppression error %v; want an *OutcomeError of class in-flight", second.Err)
	}
	checkSuppressionHolds(t, b, `{"cents":1}`, `{"cents":2}`, true)
	close(release)
	first := <-done
	agentoncetest.AssertStatus(t, harness.Executed, first)
	agentoncetest.AssertEffects(t, a.srv.Downstream, 1, first)
}

// A record expires and a genuine late call arrives: it runs anew, at the
// harness and at the downstream (whose key expired too). Documented, and
// counted as the second effect it is.
func TestScenarioExpiredRecord(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), &bolt.Options{Journal: journal.Options{Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := newRig(t, rigOptions{
		store:      store,
		harness:    &harness.Options{RecordTTL: time.Hour},
		downstream: &agentoncetest.DownstreamOptions{TTL: time.Hour, Now: clk.Now},
	})
	first := call(t, r.h, charge("c1", `{"cents":4900}`))
	clk.Advance(59 * time.Minute)
	again := call(t, r.h, charge("c2", `{"cents":4900}`))
	clk.Advance(2 * time.Minute)
	late := call(t, r.h, charge("c3", `{"cents":4900}`))
	agentoncetest.AssertStatuses(t, []harness.Result{first, again, late}, harness.Executed, harness.Replayed, harness.Executed)
	agentoncetest.AssertEffects(t, r.srv.Downstream, 2, late)
}

// Replayed answers equal the first answer, after the journal is closed
// and opened again too.
func TestScenarioReplayAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	srv := agentoncetest.NewServer(t, &charges{}, nil)
	open := func() *rig {
		store, err := bolt.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return newRig(t, rigOptions{srv: srv, store: store})
	}
	r := open()
	first := call(t, r.h, charge("c1", `{"cents":4900}`))
	r.h.Close()
	r.h.Store().Close()

	r = open()
	t.Cleanup(func() { r.h.Store().Close() })
	again := call(t, r.h, charge("c2", `{"cents":4900}`))
	agentoncetest.AssertStatus(t, harness.Replayed, again)
	agentoncetest.AssertSameAnswer(t, first, again)
	agentoncetest.AssertEffects(t, srv.Downstream, 1, first)
	if n := r.runs.Load(); n != 0 {
		t.Errorf("tool ran %d times after reopening; want 0", n)
	}
}

// Under a seeded storm of every fault, many intents each called several
// times (sequential re-issues and parallel duplicates) end with one
// effect per intent.
func TestScenarioFaultStorm(t *testing.T) {
	for _, seed := range []uint64{11, 12} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := newRig(t, rigOptions{timeout: 100 * time.Millisecond,
				faults:  &agentoncetest.FaultOptions{Seed: seed, Rate: 0.4, RetryAfter: time.Millisecond},
				harness: &harness.Options{Retry: &retryclass.Policy{MaxAttempts: 20, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond, MaxRetryAfter: time.Millisecond, InFlightBudget: 5 * time.Second}},
			})
			const intents = 12
			var all []harness.Result
			for round := range 2 {
				calls := make([]harness.ToolCall, 0, 2*intents)
				for i := range intents {
					in := fmt.Sprintf(`{"cents":%d}`, 100+i)
					calls = append(calls, charge(fmt.Sprint(round, "a", i), in), charge(fmt.Sprint(round, "b", i), in))
				}
				all = append(all, r.h.CallAll(context.Background(), calls)...)
			}
			for _, res := range all {
				if !res.OK() {
					t.Errorf("call %s: %s (%v); want a success", res.CallID, res.Status, res.Err)
				}
			}
			agentoncetest.AssertEffects(t, r.srv.Downstream, 1, all...)
			agentoncetest.AssertNoDuplicates(t, r.srv.Downstream)
			if r.faults.TotalInjected() == 0 {
				t.Errorf("no fault injected; the storm proves nothing")
			}
			t.Logf("seed %d: %d requests, %d faults, %d tool runs for %d intents", seed, r.faults.Requests(), r.faults.TotalInjected(), r.runs.Load(), intents)
		})
	}
}

// An Unkeyed tool (a plain function, faults by FaultFunc) is never run
// again blindly: a lost answer without Reconcile is unknown, and stays so
// on re-issue; with Reconcile it is settled by asking; a refusal before
// sending is retried.
func TestScenarioUnkeyedTool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     agentoncetest.Fault
		reconcile bool
		status    harness.Status
		source    harness.Source // of a success
	}{
		{"lost answer, no reconcile", agentoncetest.LoseResponse, false, harness.Unknown, harness.NoSource},
		{"lost answer, reconcile", agentoncetest.LoseResponse, true, harness.Succeeded, harness.Reconciled},
		{"delay past timeout, reconcile", agentoncetest.Delay, true, harness.Succeeded, harness.Reconciled},
		{"refused before sending", agentoncetest.ResetBeforeSend, false, harness.Succeeded, harness.Executed},
		{"503 with Retry-After", agentoncetest.Unavailable, false, harness.Succeeded, harness.Executed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Int64
			send := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				sent.Add(1)
				return json.RawMessage(`{"sent":true}`), nil
			}
			ff := agentoncetest.NewFaultFunc(send, &agentoncetest.FaultOptions{
				Script: []agentoncetest.Fault{tc.fault}, RetryAfter: time.Millisecond,
			})
			tool := harness.Tool{Name: "send_email", Func: ff.Call, Timeout: 100 * time.Millisecond}
			if tc.reconcile {
				tool.Settle = -1 // FaultFunc acts before it answers, never after
				tool.Reconcile = func(ctx context.Context, key uuid.UUID, in json.RawMessage) downstream.Reconciliation {
					if sent.Load() > 0 {
						return downstream.Happened(json.RawMessage(`{"sent":true}`))
					}
					return downstream.DidNotHappen()
				}
			}
			h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), &agentonce.OpenOptions{Options: harness.Options{Retry: fastRetry}})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := h.Register(tool); err != nil {
				t.Fatal(err)
			}
			mail := harness.ToolCall{Tenant: "acme", Session: "s", Turn: "1", Tool: "send_email", Input: json.RawMessage(`{"to":"a@example.com"}`)}
			first := call(t, h, mail)
			again := call(t, h, mail)
			agentoncetest.AssertStatus(t, tc.status, first)
			if tc.status == harness.Succeeded {
				agentoncetest.AssertStatus(t, tc.source, first)
				agentoncetest.AssertStatus(t, harness.Replayed, again)
			} else {
				agentoncetest.AssertStatus(t, tc.status, again)
			}
			if n := sent.Load(); n != 1 {
				t.Errorf("the mail was sent %d times; want 1", n)
			}
			if n := ff.Injected(tc.fault); n != 1 {
				t.Errorf("Injected(%v) = %d; want 1", tc.fault, n)
			}
		})
	}
}
