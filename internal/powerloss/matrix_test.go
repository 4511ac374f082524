package powerloss

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// The crash matrix: an agent process (a child) makes one call on a journal
// that lives on the power-loss mount served by the test, and at a crash
// point the power is cut and the process killed. The test then reads the
// journal file as the cut left it and restarts the agent on it.

// kind is an effect kind of the matrix's tool.
type kind struct {
	name      string
	effect    journal.Effect
	reconcile bool // the tool has a Reconcile hook (Unkeyed only)
}

var kinds = []kind{
	{"unkeyed", journal.Unkeyed, false},
	{"unkeyed-reconcile", journal.Unkeyed, true},
	{"keyed", journal.Keyed, false},
	{"idempotent", journal.Idempotent, false},
}

// The crash points, in the order the call reaches them.
const (
	beforeWriteAhead = "before-write-ahead" // the key is derived; the journal not yet asked
	afterWriteAhead  = "after-write-ahead"  // inside the tool, before its effect
	afterEffect      = "after-effect"       // inside the tool, after its effect
	afterOutcome     = "after-outcome"      // the call returned
)

var points = []string{beforeWriteAhead, afterWriteAhead, afterEffect, afterOutcome}

// answer is what a call told its caller, in the matrix's own words:
// "succeeded" (the tool ran or was reconciled in this call), "replayed"
// (a success answered from the journal), "unknown", or another status
// ("rejected (why)", ...).
type answer struct {
	said   string
	output string
	key    string
}

// hooks are the matrix tool's behaviour, in the child or the restarted
// agent.
type hooks struct {
	// beforeWriteAhead, if set, is called with the key before the
	// journal is asked.
	beforeWriteAhead func(key string)
	// run is the tool: it returns the tool's output.
	run func(key string) string
	// reconcile answers "did the effect for key happen?" with its output.
	reconcile func(key string) (output string, happened bool)
}

const matrixTool = "charge_card"

// callTimes opens a harness on the journal at path with the matrix's tool
// of kind k and makes the matrix's one call n times. It is the only code of
// this file that uses the harness API; the caller closes the harness with
// the returned func.
func callTimes(ctx context.Context, path string, k kind, hk hooks, n int) ([]answer, func(), error) {
	opts := &harness.Options{Observer: harness.ObserverFunc(func(ctx context.Context, e harness.Event) {
		if e.Kind == harness.EventBeforeWriteAhead && hk.beforeWriteAhead != nil {
			hk.beforeWriteAhead(e.Key.String())
		}
	})}
	h, err := agentonce.Open(ctx, path, &agentonce.OpenOptions{Options: *opts})
	if err != nil {
		return nil, nil, err
	}
	// A short timeout and a short declared settle window (the downstream
	// is this process) keep an Unkeyed attempt's quiet time (start +
	// timeout + settle, in which no restart takes it over) short.
	tool := harness.Tool{Name: matrixTool, Effect: k.effect, Timeout: 100 * time.Millisecond, Settle: 100 * time.Millisecond,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			key, _ := downstream.KeyFromContext(ctx)
			return json.RawMessage(hk.run(key.String())), nil
		}}
	if k.reconcile {
		tool.Reconcile = func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
			if out, happened := hk.reconcile(key.String()); happened {
				return downstream.Happened(json.RawMessage(out))
			}
			return downstream.DidNotHappen()
		}
	}
	if err := h.Register(tool); err != nil {
		h.Close()
		return nil, nil, err
	}
	var answers []answer
	for range n {
		res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: matrixTool,
			Input: json.RawMessage(`{"customer":8812,"amount":4900,"currency":"usd"}`)})
		a := answer{output: string(res.Output), key: res.Key.String()}
		switch {
		case res.Status == harness.Rejected:
			// A rejection: the tool did not run (the journal failed).
			a.said = fmt.Sprintf("rejected (%v)", res.Err)
		case res.OK() && res.Source == harness.Replayed:
			a.said = "replayed"
		case res.OK():
			a.said = "succeeded"
		case res.Status == harness.Unknown:
			a.said = "unknown"
		default:
			a.said = fmt.Sprintf("%s (%v)", res.Status, res.Err)
		}
		answers = append(answers, a)
	}
	return answers, func() { h.Close() }, nil
}

// output is the tool's result for key: the same in every process.
func output(key string) string { return `{"charged":"` + key + `"}` }

const matrixChildEnv = "POWERLOSS_MATRIX_CHILD" // "journal path|kind|crash point", in a child

// TestPowerChild is the agent process of TestPowerLossMatrix. It reports
// on the pipe, in order: "key K" before the write-ahead, "started K" when
// the tool starts, "effect K" when the tool's effect is done (the parent is
// the downstream: the line is the effect), "returned ANSWER OUTPUT" when
// the call returned, and "crash POINT" when it blocks at its crash point.
func TestPowerChild(t *testing.T) {
	cfg := os.Getenv(matrixChildEnv)
	if cfg == "" {
		t.Skip("helper process for TestPowerLossMatrix")
	}
	parts := strings.Split(cfg, "|")
	path, kindName, point := parts[0], parts[1], parts[2]
	var k kind
	for _, c := range kinds {
		if c.name == kindName {
			k = c
		}
	}
	crash := func() {
		report("crash %s", point)
		block()
	}
	hk := hooks{
		beforeWriteAhead: func(key string) {
			report("key %s", key)
			if point == beforeWriteAhead {
				crash()
			}
		},
		run: func(key string) string {
			report("started %s", key)
			if point == afterWriteAhead {
				crash()
			}
			report("effect %s", key)
			if point == afterEffect {
				crash()
			}
			return output(key)
		},
		reconcile: func(string) (string, bool) {
			fail("reconcile called in the first process")
			return "", false
		},
	}
	answers, _, err := callTimes(context.Background(), path, k, hk, 1)
	if err != nil {
		fail("call: %v", err)
	}
	report("returned %s %s", answers[0].said, answers[0].output)
	crash()
}

// service is the side-effect target of the matrix's tool, in the test
// process. An unprotected one (Unkeyed) applies every request; a Keyed one
// honours the idempotency key and an Idempotent one is an upsert, so both
// apply a key once.
type service struct {
	protected bool

	mu       sync.Mutex
	requests []string       // the key of every effect request, in order; guarded by mu
	applied  map[string]int // effects applied, by key; guarded by mu
}

func (d *service) effect(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, key)
	if d.protected && d.applied[key] > 0 {
		return
	}
	d.applied[key]++
}

func (d *service) effects() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.applied {
		n += c
	}
	return n
}

func (d *service) happened(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applied[key] > 0
}

// firstRun is what the child reported before its crash.
type firstRun struct {
	key      string
	started  bool
	effect   bool
	returned string // "ANSWER OUTPUT", when the call returned
}

// TestPowerLossMatrix cuts the power at each crash point of one call of
// each effect kind, then checks the journal file the cut left and what a
// restarted agent does with the same call:
//
//   - before the write-ahead: no record; the restart runs the tool once;
//   - after the write-ahead or after the effect (inside the tool): an
//     Unkeyed record is on disk, pending, with its attempt, because its
//     write-ahead is durable before the tool runs; a Keyed or Idempotent
//     record need not be (its write-ahead is not synced, by design) but if
//     present is pending for this intent. The restart never runs an
//     Unkeyed tool again: without Reconcile it answers unknown, with it
//     the hook decides (ran once in all); Keyed and Idempotent run again
//     with the same key and the downstream applies the effect once;
//   - after the outcome: the record survives as succeeded with the output
//     the first call answered, and the restart replays it.
//
// In every cell the downstream sees at most one effect, and a second call
// after the restart is answered from the journal with the same answer.
func TestPowerLossMatrix(t *testing.T) {
	for _, k := range kinds {
		for _, point := range points {
			t.Run(k.name+"/"+point, func(t *testing.T) { powerLossCell(t, k, point) })
		}
	}
}

func powerLossCell(t *testing.T, k kind, point string) {
	m := mount(t)
	const name = "agent.journal"
	d := &service{protected: k.effect != journal.Unkeyed, applied: map[string]int{}}
	c := startChild(t, "TestPowerChild", matrixChildEnv+"="+filepath.Join(m.Dir(), name)+"|"+k.name+"|"+point)
	var first firstRun
	for crashed := false; !crashed; {
		verb, rest, _ := strings.Cut(c.next(), " ")
		switch verb {
		case "key":
			first.key = rest
		case "started":
			first.started = true
		case "effect":
			first.effect = true
			d.effect(rest)
		case "returned":
			first.returned = rest
		case "crash":
			crashed = true
			if rest != point {
				t.Fatalf("child crashed at %s; want %s", rest, point)
			}
		default:
			t.Fatalf("child: %s %s", verb, rest)
		}
	}
	m.PowerCut()
	c.kill()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Backing(), name)
	onDisk := checkJournalAfterCut(t, path, k, point, first)

	restarted := hooks{
		run: func(key string) string {
			if key != first.key {
				t.Errorf("restarted tool ran with key %s; the first process had %s", key, first.key)
			}
			d.effect(key)
			return output(key)
		},
		reconcile: func(key string) (string, bool) {
			if d.happened(key) {
				return output(key), true
			}
			return "", false
		},
	}
	answers, closeHarness, err := callTimes(context.Background(), path, k, restarted, 2)
	if err != nil {
		t.Fatalf("restart on the journal the cut left: %v", err)
	}
	closeHarness()

	want := "succeeded"
	switch {
	case point == afterOutcome:
		want = "replayed"
	case k.effect == journal.Unkeyed && !k.reconcile && point != beforeWriteAhead:
		want = "unknown"
	}
	if answers[0].said != want {
		t.Errorf("restarted call said %s; want %s", answers[0].said, want)
	}
	if want != "unknown" && answers[0].output != output(first.key) {
		t.Errorf("restarted call output %s; want %s", answers[0].output, output(first.key))
	}
	again := map[string]string{"succeeded": "replayed", "replayed": "replayed", "unknown": "unknown"}[answers[0].said]
	if answers[1].said != again || answers[1].output != answers[0].output {
		t.Errorf("second call after the restart said %s %s; want %s %s", answers[1].said, answers[1].output, again, answers[0].output)
	}

	wantEffects := 1
	if want == "unknown" && !first.effect {
		wantEffects = 0 // the tool started but did nothing, and is never re-run
	}
	if got := d.effects(); got != wantEffects {
		t.Errorf("downstream applied %d effects (requests %v); want %d", got, d.requests, wantEffects)
	}
	if k.effect == journal.Unkeyed && len(d.requests) > 1 {
		t.Errorf("Unkeyed tool reached the downstream %d times; want at most once", len(d.requests))
	}
	t.Logf("first process: started %v, effect %v, returned %v; on disk after the cut: %s; restart: %s, then %s; downstream requests %d, effects %d",
		first.started, first.effect, first.returned != "", onDisk, answers[0].said, answers[1].said, len(d.requests), d.effects())
}

// checkJournalAfterCut opens the journal file as the cut left it,
// read-only, checks the record of the first process's call and says what
// it found.
func checkJournalAfterCut(t *testing.T, path string, k kind, point string, first firstRun) (found string) {
	t.Helper()
	st, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		t.Fatalf("open the journal the cut left: %v", err)
	}
	defer st.Close()
	key, err := uuid.Parse(first.key)
	if err != nil {
		t.Fatalf("child reported key %q: %v", first.key, err)
	}
	rec, err := st.Get(context.Background(), key)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get(%s) after the cut: %v", key, err)
	}
	if err != nil {
		found = "no record"
	} else {
		found = fmt.Sprintf("%s with %d attempt(s)", rec.State, len(rec.Attempts))
	}
	switch point {
	case beforeWriteAhead:
		if err == nil {
			t.Errorf("record before the write-ahead = %s; want none", rec.State)
		}
	case afterWriteAhead, afterEffect:
		if !first.started {
			t.Fatalf("child crashed at %s without starting the tool", point)
		}
		if err != nil {
			if k.effect == journal.Unkeyed {
				t.Errorf("Unkeyed tool started but its write-ahead record is not on disk after the cut")
			}
			return found // Keyed and Idempotent write-aheads are not synced
		}
		if rec.State != journal.StatePending || len(rec.Attempts) != 1 || rec.Intent.Tool != matrixTool {
			t.Errorf("record after the cut = %s, %d attempts, tool %q; want pending, 1 attempt, %q",
				rec.State, len(rec.Attempts), rec.Intent.Tool, matrixTool)
		}
	case afterOutcome:
		answerSaid, out, _ := strings.Cut(first.returned, " ")
		if answerSaid != "succeeded" || out != output(first.key) {
			t.Fatalf("first call returned %q; want succeeded %s", first.returned, output(first.key))
		}
		if err != nil {
			t.Errorf("recorded outcome lost in the cut: no record for %s", key)
		} else if rec.State != journal.StateSucceeded || string(rec.Output) != out {
			t.Errorf("record after the cut = %s %s; want succeeded %s", rec.State, rec.Output, out)
		}
	}
	return found
}
