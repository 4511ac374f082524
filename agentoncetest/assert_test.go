package agentoncetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
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

// An Unkeyed tool's key reaches its downstream in X-Agentonce-Key, as the
// Downstream's documentation says: a Passthrough Downstream with that
// KeyHeader counts the call's effect under the call's key, and a Report
// (the Reporter of a main program) finds nothing wrong.
func TestUnkeyedToolKeyHeader(t *testing.T) {
	srv, err := agentoncetest.StartServer(&charges{}, &agentoncetest.DownstreamOptions{
		Passthrough: true, KeyHeader: downstream.DefaultUnkeyedKeyHeader,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	client := &http.Client{Transport: &downstream.Transport{Base: srv.Client().Transport}}
	err = h.Register(harness.Tool{Name: "email", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/emails", bytes.NewReader(in))
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			return json.RawMessage(`{"sent":true}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	res := h.Call(context.Background(), harness.ToolCall{ID: "c1", Session: "s", Turn: "1", Tool: "email", Input: json.RawMessage(`{"to":"a"}`)})
	report := agentoncetest.NewReport(nil)
	agentoncetest.AssertStatus(report, harness.Executed, res)
	agentoncetest.AssertEffects(report, srv.Downstream, 1, res)
	agentoncetest.AssertNoDuplicates(report, srv.Downstream)
	if report.Failed() {
		t.Errorf("Report has %d failures; want 0 (effects under the key %s: %d, under none: %d)",
			report.Failures(), res.Key, srv.Downstream.Effects(res.Key.String()), srv.Downstream.Effects(""))
	}
	// Under the default KeyHeader the same call counts under no key.
	plain, err := agentoncetest.StartServer(&charges{}, &agentoncetest.DownstreamOptions{Passthrough: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	req, _ := http.NewRequest("POST", plain.URL, strings.NewReader("{}"))
	req.Header.Set(downstream.DefaultUnkeyedKeyHeader, res.Key.String())
	resp, err := plain.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := plain.Downstream.Effects(res.Key.String()); got != 0 {
		t.Errorf("default KeyHeader: Effects(key) = %d; want 0 (X-Agentonce-Key is not Idempotency-Key)", got)
	}
}
