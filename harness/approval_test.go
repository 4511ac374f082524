package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// approvedTool is a Keyed tool that needs n approvals and counts its
// effects.
func approvedTool(n int, eff *effects) harness.Tool {
	return harness.Tool{Name: "refund", Effect: journal.Keyed, Approvals: n,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return echoOutput(eff.do(ctx), 1), nil
		}}
}

// countInFlight counts the EventInFlight events a harness reports: a call
// awaiting approval must not wait as for an intent in flight. It counts
// the EventNeedsPerson events that name the approve command too.
type countInFlight struct{ n, person atomic.Int32 }

func (c *countInFlight) Observe(_ context.Context, e harness.Event) {
	switch {
	case e.Kind == harness.EventInFlight:
		c.n.Add(1)
	case e.Kind == harness.EventNeedsPerson && strings.Contains(e.Command, "agentctl approve "+e.Key.String()+" --fingerprint "):
		c.person.Add(1)
	}
}

func approve(t *testing.T, st journal.Store, key [16]byte, fp keyderive.Fingerprint, by string) {
	t.Helper()
	if _, err := st.Resolve(context.Background(), key, journal.Resolution{State: journal.StatePending, By: by, Fingerprint: fp}); err != nil {
		t.Fatalf("approve %x by %s: %v", key, by, err)
	}
}

// A tool that needs approval runs nothing until it has it: the call and
// its re-issues are answered AwaitingApproval at once, with the command an
// approver runs; an approval of another input runs nothing; once the
// approvals are given a re-issue runs it once, and later ones replay.
func TestApprovalGate(t *testing.T) {
	_, st := tempJournal(t)
	obs := new(countInFlight)
	h := newHarness(t, st, &harness.Options{Observer: obs,
		Retry: &retryclass.Policy{InitialInterval: time.Millisecond, InFlightBudget: time.Hour}})
	var eff effects
	mustRegister(t, h, approvedTool(2, &eff))
	c := call("refund", `{"amount":900}`)

	res := mustCall(t, h, c)
	rec := mustGet(t, st, res.Key)
	var oe *harness.OutcomeError
	if res.Status != harness.AwaitingApproval || res.Source != harness.NoSource || !errors.As(res.Err, &oe) || oe.Approval == nil {
		t.Fatalf("first call: Status %v, Source %v, Err %v; want awaiting-approval, none, an OutcomeError with its Approval", res.Status, res.Source, res.Err)
	}
	if rec.State != journal.StateAwaiting || rec.Approval.Need != 2 {
		t.Fatalf("record: %s needing %v; want awaiting, needing 2", rec.State, rec.Approval)
	}
	cmd := fmt.Sprintf("agentctl approve %s --fingerprint %s", res.Key, rec.Fingerprint)
	for _, want := range []string{cmd, "2 approval(s), 0 given", rec.Approval.Deadline.UTC().Format(time.RFC3339), "has not run"} {
		if !strings.Contains(res.ForModel(), want) {
			t.Errorf("ForModel() = %q; want it to hold %q", res.ForModel(), want)
		}
	}

	// Another input's approval is refused, and runs nothing.
	other := rec.Fingerprint
	other[0] ^= 1
	if _, err := st.Resolve(context.Background(), res.Key, journal.Resolution{State: journal.StatePending, By: "mallory", Fingerprint: other}); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("approval of another fingerprint: %v; want ErrInvalid", err)
	}
	approve(t, st, res.Key, rec.Fingerprint, "alice") // 1 of 2
	for i := range 3 {
		if res := mustCall(t, h, c); res.Status != harness.AwaitingApproval || !strings.Contains(res.ForModel(), "1 given") {
			t.Fatalf("re-issue %d before the second approval: %v %q; want awaiting-approval, 1 given", i, res.Status, res.ForModel())
		}
	}
	if eff.all() != 0 || obs.n.Load() != 0 || obs.person.Load() != 4 {
		t.Fatalf("before approval: %d effects, %d in-flight waits, %d needs-person events naming the approve command; want 0, 0 and 4",
			eff.all(), obs.n.Load(), obs.person.Load())
	}

	approve(t, st, res.Key, rec.Fingerprint, "bob")
	if res := mustCall(t, h, c); !res.OK() || res.Source != harness.Executed {
		t.Fatalf("re-issue after approval: %v (%v) %v; want succeeded, executed", res.Status, res.Source, res.Err)
	}
	if res := mustCall(t, h, c); !res.OK() || res.Source != harness.Replayed {
		t.Fatalf("re-issue after the run: %v (%v); want succeeded, replayed", res.Status, res.Source)
	}
	if eff.count(res.Key) != 1 {
		t.Errorf("effects = %d; want 1", eff.count(res.Key))
	}
	if got := mustGet(t, st, res.Key); got.State != journal.StateSucceeded || len(got.Approval.Given) != 2 || len(got.Attempts) != 1 {
		t.Errorf("record after the run: %s, %d approvals, %d attempts; want succeeded, 2, 1", got.State, len(got.Approval.Given), len(got.Attempts))
	}
}

// A rejection, and a deadline that passes, suppress the intent for good:
// the answer says why and who decided, a later approval is refused, the
// same turn's altered input is refused by the guard, and nothing runs.
func TestApprovalRejectedOrExpired(t *testing.T) {
	var skew atomic.Int64
	st := openBolt(t, filepath.Join(t.TempDir(), "j"), &journal.Options{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	t.Cleanup(func() { st.Close() })
	h := newHarness(t, st, nil)
	var eff effects
	tool := approvedTool(1, &eff)
	tool.ApprovalTTL = time.Hour
	mustRegister(t, h, tool)
	ctx := context.Background()

	rejected := call("refund", `{"amount":1}`)
	res := mustCall(t, h, rejected)
	if _, err := st.Resolve(ctx, res.Key, journal.Resolution{State: journal.StateSuppressed, By: "carol", Reason: "not this customer"}); err != nil {
		t.Fatalf("reject: %v", err)
	}
	expired := call("refund", `{"amount":2}`)
	expired.Turn = "2"
	exp := mustCall(t, h, expired)
	skew.Store(int64(2 * time.Hour))

	for _, tc := range []struct {
		c    harness.ToolCall
		want string
	}{{rejected, "rejected by carol: not this customer"}, {expired, "approval deadline"}} {
		for i := range 2 {
			res := mustCall(t, h, tc.c)
			var oe *harness.OutcomeError
			if res.Status != harness.Suppressed || !errors.As(res.Err, &oe) || oe.Approval == nil || !strings.Contains(res.ForModel(), tc.want) {
				t.Fatalf("%s call %d: %v %q; want suppressed, saying %q", tc.c.Input, i, res.Status, res.ForModel(), tc.want)
			}
		}
	}
	rec := mustGet(t, st, exp.Key)
	if _, err := st.Resolve(ctx, exp.Key, journal.Resolution{State: journal.StatePending, By: "dave", Fingerprint: rec.Fingerprint}); !errors.Is(err, journal.ErrNotResolvable) {
		t.Errorf("approval after the deadline: %v; want ErrNotResolvable", err)
	}
	altered := rejected
	altered.Input = json.RawMessage(`{"amount":1,"note":"please"}`)
	if res := mustCall(t, h, altered); res.Status != harness.Suppressed {
		t.Errorf("altered input in the rejected call's turn: %v; want suppressed by the guard", res.Status)
	}
	if eff.all() != 0 {
		t.Errorf("effects = %d; want 0", eff.all())
	}
}

// After approval, several harnesses (several agents on one journal)
// re-issuing the intent at the same moment run it exactly once.
func TestApprovalRunsOnceAcrossHarnesses(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		_, st := tempJournal(t)
		approvedOnce(t, false, func(int) journal.Store { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		first := pgStore(t)
		approvedOnce(t, true, func(i int) journal.Store {
			if i == 0 {
				return first
			}
			return probePG(t, first.Schema(), nil)
		})
	})
}

// approvedOnce runs the test on the stores store opens; maySkip skips it
// on a store that cannot yet record an intent awaiting approval.
func approvedOnce(t *testing.T, maySkip bool, store func(i int) journal.Store) {
	const harnesses, callers = 4, 3
	var eff effects
	hs := make([]*harness.Harness, harnesses)
	for i := range hs {
		hs[i] = newHarness(t, store(i), &harness.Options{Owner: fmt.Sprintf("agent-%d", i),
			Retry: &retryclass.Policy{InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond, InFlightBudget: time.Minute}})
		mustRegister(t, hs[i], approvedTool(1, &eff))
	}
	c := call("refund", `{"amount":700}`)
	first := mustCall(t, hs[0], c)
	if first.Status != harness.AwaitingApproval && maySkip {
		t.Skipf("this store cannot record an intent awaiting approval: %v", first.Err)
	}
	if first.Status != harness.AwaitingApproval {
		t.Fatalf("first call: %v %v; want awaiting-approval", first.Status, first.Err)
	}
	approve(t, hs[0].Store(), first.Key, mustGet(t, hs[0].Store(), first.Key).Fingerprint, "alice")

	start := make(chan struct{})
	results := make(chan harness.Result, harnesses*callers)
	var wg sync.WaitGroup
	for _, h := range hs {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results <- h.Call(context.Background(), c)
			}()
		}
	}
	close(start)
	wg.Wait()
	close(results)
	executed := 0
	for res := range results {
		if !res.OK() {
			t.Errorf("a re-issue after approval: %v %v; want succeeded", res.Status, res.Err)
		}
		if res.Source == harness.Executed {
			executed++
		}
	}
	if eff.count(first.Key) != 1 || executed != 1 {
		t.Errorf("effects = %d, calls that executed = %d; want 1 and 1", eff.count(first.Key), executed)
	}
}
