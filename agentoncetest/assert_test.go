package agentoncetest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
)

// recordingTB records the failures an assertion reports instead of
// failing the test, so that the assertions themselves can be tested.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestAssertions(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, &agentoncetest.DownstreamOptions{Passthrough: true})
	once, twice := uuid.New(), uuid.New()
	do(t, srv.Client(), "POST", srv.URL, once.String(), "{}")
	do(t, srv.Client(), "POST", srv.URL, twice.String(), "{}")
	do(t, srv.Client(), "POST", srv.URL, twice.String(), "{}")
	d := srv.Downstream
	r1 := harness.Result{CallID: "a", Tool: "charge", Status: harness.Succeeded, Source: harness.Executed, Key: once}
	r2 := harness.Result{CallID: "b", Tool: "charge", Status: harness.Succeeded, Source: harness.Replayed, Key: twice}

	for _, tc := range []struct {
		name   string
		check  func(tb testing.TB) bool
		errHas string // "" means the assertion holds
	}{
		{"effects hold", func(tb testing.TB) bool { return agentoncetest.AssertEffects(tb, d, 1, r1, r1) }, ""},
		{"effects broken", func(tb testing.TB) bool { return agentoncetest.AssertEffects(tb, d, 1, r1, r2) }, "Effects(" + twice.String() + ") = 2"},
		{"duplicates broken", func(tb testing.TB) bool { return agentoncetest.AssertNoDuplicates(tb, d) }, "Duplicates() = 1"},
		{"statuses hold", func(tb testing.TB) bool {
			return agentoncetest.AssertStatuses(tb, []harness.Result{r1, r2}, harness.Executed, harness.Replayed)
		}, ""},
		{"statuses broken", func(tb testing.TB) bool {
			return agentoncetest.AssertStatuses(tb, []harness.Result{r1, r2}, harness.Executed, harness.Executed)
		}, "= succeeded (replayed)"},
		{"statuses count", func(tb testing.TB) bool {
			return agentoncetest.AssertStatuses[harness.Status](tb, []harness.Result{r1})
		}, "got 1 results"},
		{"status with error", func(tb testing.TB) bool {
			bad := r1
			bad.Err = fmt.Errorf("boom")
			return agentoncetest.AssertStatus(tb, harness.Executed, bad)
		}, "succeeded with error boom"},
		{"same answer broken", func(tb testing.TB) bool {
			a, b := r1, r1
			b.Output = []byte(`{"x":1}`)
			return agentoncetest.AssertSameAnswer(tb, a, b)
		}, "output"},
	} {
		rec := &recordingTB{TB: t}
		ok := tc.check(rec)
		if ok != (tc.errHas == "") || (tc.errHas == "") != (len(rec.errs) == 0) {
			t.Errorf("%s: returned %v with failures %q; want ok=%v", tc.name, ok, rec.errs, tc.errHas == "")
			continue
		}
		if tc.errHas != "" && !strings.Contains(strings.Join(rec.errs, "\n"), tc.errHas) {
			t.Errorf("%s: failures %q; want one containing %q", tc.name, rec.errs, tc.errHas)
		}
	}
}
