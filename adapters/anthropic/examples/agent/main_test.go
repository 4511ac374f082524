package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The example's conversation: the shop sees one charge and one mail for
// the first user turn (across parallel duplicates, a restart and a
// re-plan) and one charge for the tip, and the transcript ends with the
// count of duplicates.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	sum, err := run(context.Background(), t.TempDir(), &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if sum.charges != 2 || sum.emails != 1 || sum.duplicates != 0 {
		t.Errorf("run: %d charges, %d mails, %d duplicates; want 2, 1, 0\n%s", sum.charges, sum.emails, sum.duplicates, out.String())
	}
	want := map[string]int{
		"succeeded executed":  3,
		"succeeded collapsed": 1,
		"succeeded replayed":  3,
		"failed executed":     1,
	}
	for k, n := range want {
		if sum.sources[k] != n {
			t.Errorf("run: %d results %q; want %d", sum.sources[k], k, n)
		}
	}
	if len(sum.sources) != len(want) {
		t.Errorf("run: results %v; want only %v", sum.sources, want)
	}
	if !strings.HasSuffix(out.String(), "duplicate side effects: 0\n") {
		t.Errorf("run's output ends %q; want the duplicate count", out.String()[max(0, out.Len()-80):])
	}
}
