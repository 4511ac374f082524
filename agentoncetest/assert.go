package agentoncetest

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/agentonce/agentonce/harness"
)

// The assertions report through tb.Errorf, so that a test sees every
// broken guarantee, and return whether they held.

// Reporter is what the assertions report to: a *testing.T, *testing.B or
// any testing.TB, or a *Report in a program that is not a test (a demo, a
// smoke check run against staging).
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// Report is a Reporter for a main program: it writes each failure as a
// line and counts them; its zero value only counts. It is safe for
// concurrent use.
type Report struct {
	mu sync.Mutex
	w  io.Writer // guarded by mu
	n  int       // failures so far; guarded by mu
}

// NewReport returns a Report that writes its failures to w.
func NewReport(w io.Writer) *Report { return &Report{w: w} }

// Helper does nothing: a Report has no call stack to trim.
func (r *Report) Helper() {}

// Errorf records one failure and writes it, with a newline, to the writer.
func (r *Report) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.w != nil {
		fmt.Fprintf(r.w, format+"\n", args...)
	}
}

// Failures is how many failures were reported.
func (r *Report) Failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Failed reports whether any failure was reported.
func (r *Report) Failed() bool { return r.Failures() > 0 }

// AssertNoDuplicates checks that d performed no side effect twice for one
// (client, key).
func AssertNoDuplicates(tb Reporter, d *Downstream) bool {
	tb.Helper()
	if n := d.Duplicates(); n != 0 {
		tb.Errorf("downstream Duplicates() = %d; want 0 (a side effect happened twice for one key)", n)
		return false
	}
	return true
}

// AssertEffects checks that d performed exactly want side effects for
// the intent of each result (its key, as downstream.Transport sends it).
// Results that share a key (collapsed, replayed) are checked once.
func AssertEffects(tb Reporter, d *Downstream, want int, results ...harness.Result) bool {
	tb.Helper()
	ok := true
	seen := map[string]bool{}
	for _, r := range results {
		key := r.Key.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		if got := d.Effects(key); got != want {
			tb.Errorf("downstream Effects(%s) = %d for %s call %q (%s); want %d", key, got, r.Tool, r.CallID, r.Status, want)
			ok = false
		}
	}
	return ok
}

// Outcome is what an assertion checks a result against: a harness.Status
// (Succeeded, Suppressed, …), or a harness.Source (Executed, Replayed,
// Collapsed, Reconciled), which stands for a success learned that way.
type Outcome interface {
	harness.Status | harness.Source
}

// AssertStatuses checks each result against want, in order:
// AssertStatuses(t, res, harness.Executed, harness.Collapsed) asserts a
// success that ran and one that joined it. A success needs a nil error.
func AssertStatuses[O Outcome](tb Reporter, results []harness.Result, want ...O) bool {
	tb.Helper()
	if len(results) != len(want) {
		tb.Errorf("got %d results %s; want %d %v", len(results), statusList(results), len(want), want)
		return false
	}
	ok := true
	for i, r := range results {
		if !matches(r, want[i]) {
			tb.Errorf("result %d (%s call %q) = %s (err %v); want %v", i, r.Tool, r.CallID, describe(r), r.Err, want[i])
			ok = false
			continue
		}
		if r.Status == harness.Succeeded && r.Err != nil {
			tb.Errorf("result %d (%s call %q) succeeded with error %v; want a success", i, r.Tool, r.CallID, r.Err)
			ok = false
		}
	}
	return ok
}

// AssertStatus checks every result against want (see AssertStatuses).
func AssertStatus[O Outcome](tb Reporter, want O, results ...harness.Result) bool {
	tb.Helper()
	return AssertStatuses(tb, results, slices.Repeat([]O{want}, len(results))...)
}

func matches[O Outcome](r harness.Result, want O) bool {
	switch w := any(want).(type) {
	case harness.Status:
		return r.Status == w
	case harness.Source:
		return r.Status == harness.Succeeded && r.Source == w
	}
	return false
}

// describe is a result's status and, where there is one, its source.
func describe(r harness.Result) string {
	if r.Source == harness.NoSource {
		return r.Status.String()
	}
	return r.Status.String() + " (" + r.Source.String() + ")"
}

// AssertSameAnswer checks that a replayed (or collapsed) result says to
// the model what the first one said, with the same key and output.
func AssertSameAnswer(tb Reporter, first, again harness.Result) bool {
	tb.Helper()
	ok := true
	if first.Key != again.Key {
		tb.Errorf("keys differ: %s then %s; want one intent", first.Key, again.Key)
		ok = false
	}
	if string(first.Output) != string(again.Output) {
		tb.Errorf("output %s then %s; want the same", first.Output, again.Output)
		ok = false
	}
	if a, b := first.ForModel(), again.ForModel(); a != b {
		tb.Errorf("ForModel() %q then %q; want the same text", a, b)
		ok = false
	}
	return ok
}

func statusList(results []harness.Result) string {
	s := make([]string, len(results))
	for i, r := range results {
		s[i] = describe(r)
	}
	return "[" + strings.Join(s, " ") + "]"
}
