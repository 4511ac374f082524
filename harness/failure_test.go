package harness

import (
	"testing"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// TestFailureTable walks failureTable over every effect kind, class and
// may-have-executed, and checks what docs/design.md promises of each cell:
// every cell has a row of its own, no row is shadowed, a retryable class is
// retried and the others recorded at once, an Unkeyed attempt that may have
// executed is reconciled and never retried blindly, and "failed" (nothing
// was done) is recorded only when no attempt may have taken effect, or for
// a tool without side effects.
func TestFailureTable(t *testing.T) {
	effects := []journal.Effect{journal.Unkeyed, journal.ReadOnly, journal.Idempotent, journal.Keyed}
	classes := []retryclass.Class{retryclass.NotExecuted, retryclass.MaybeExecuted, retryclass.InFlight,
		retryclass.Mismatch, retryclass.Terminal, retryclass.Canceled}
	used := make([]bool, len(failureTable))
	for _, e := range effects {
		for _, c := range classes {
			for _, ran := range []bool{false, true} {
				if c == retryclass.MaybeExecuted && !ran {
					continue // a MaybeExecuted attempt is one that may have run
				}
				r := failureOf(e, c, ran)
				found := false
				for i, row := range failureTable {
					if row.class == c && row.ran.holds(ran) && row.effect.has(e) {
						used[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("failureOf(%v, %v, ran=%v): no row in failureTable", e, c, ran)
					continue
				}
				if got, want := r.step != recordNow, c.Retryable(); got != want {
					t.Errorf("failureOf(%v, %v, ran=%v).step = %v; want retried = %v", e, c, ran, r.step, want)
				}
				if e == journal.Unkeyed && c == retryclass.MaybeExecuted && r.step != reconcileFirst {
					t.Errorf("failureOf(Unkeyed, MaybeExecuted) = %v; want reconcileFirst (never retried blindly)", r.step)
				}
				if r.state == journal.StateFailed && ran && e != journal.ReadOnly {
					t.Errorf("failureOf(%v, %v, ran=true) records failed; want never \"nothing was done\" after an attempt that may have run", e, c)
				}
				if r.state == journal.StateSucceeded || r.state == journal.StatePending {
					t.Errorf("failureOf(%v, %v, ran=%v) records %v; want a failure's outcome", e, c, ran, r.state)
				}
				if r.state == journal.StateFailed && r.record == retryclass.MaybeExecuted {
					t.Errorf("failureOf(%v, %v, ran=%v) records failed as maybe-executed; want a definite class", e, c, ran)
				}
			}
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("failureTable[%d] (%v) is never the first match; want no shadowed row", i, failureTable[i].class)
		}
	}
	if r := failureOf(journal.Keyed, retryclass.Success, false); r.class != retryclass.MaybeExecuted {
		t.Errorf("failureOf(Success) = the row of %v; want MaybeExecuted's (an error is never a success)", r.class)
	}
}
