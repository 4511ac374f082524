package agentoncetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/harness"
)

// The assertions report through tb.Errorf, so a test sees every broken
// guarantee at once, and return whether they held so that a test can stop
// when later checks would make no sense.

// AssertNoDuplicates checks that d performed no side effect twice for one
// (client, key).
func AssertNoDuplicates(tb testing.TB, d *Downstream) bool {
	tb.Helper()
	if n := d.Duplicates(); n != 0 {
		tb.Errorf("downstream Duplicates() = %d; want 0 (a side effect happened twice for one key)", n)
		return false
	}
	return true
}

// AssertEffects checks that d performed exactly want side effects for
// the intent of each result (its key, as harness.Transport sends it).
// Results that share a key (collapsed, replayed) are checked once.
func AssertEffects(tb testing.TB, d *Downstream, want int, results ...harness.Result) bool {
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

// AssertStatuses checks each result's status against want, in order:
// AssertStatuses(t, res, harness.Executed, harness.Collapsed). A nil
// result error is required for Executed, Replayed and Collapsed.
func AssertStatuses(tb testing.TB, results []harness.Result, want ...harness.Status) bool {
	tb.Helper()
	if len(results) != len(want) {
		tb.Errorf("got %d results %s; want %d %s", len(results), statusList(results), len(want), wantList(want))
		return false
	}
	ok := true
	for i, r := range results {
		if r.Status != want[i] {
			tb.Errorf("result %d (%s call %q) status = %s (err %v); want %s", i, r.Tool, r.CallID, r.Status, r.Err, want[i])
			ok = false
			continue
		}
		switch r.Status {
		case harness.Executed, harness.Replayed, harness.Collapsed:
			if r.Err != nil {
				tb.Errorf("result %d (%s call %q) status %s with error %v; want a success", i, r.Tool, r.CallID, r.Status, r.Err)
				ok = false
			}
		}
	}
	return ok
}

// AssertStatus checks that every result has status want.
func AssertStatus(tb testing.TB, want harness.Status, results ...harness.Result) bool {
	tb.Helper()
	ws := make([]harness.Status, len(results))
	for i := range ws {
		ws[i] = want
	}
	return AssertStatuses(tb, results, ws...)
}

// AssertSameAnswer checks that a replayed (or collapsed) result says to
// the model what the first one said, with the same key and output.
func AssertSameAnswer(tb testing.TB, first, again harness.Result) bool {
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
		s[i] = r.Status.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

func wantList(want []harness.Status) string {
	return fmt.Sprint(slices.Clone(want))
}
