package agentoncetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/agentoncetest"
)

const chargeScript = `{
  "session": "s1",
  "turns": [
    {"user": "charge customer 8812 49 USD", "steps": [
      {"calls": [
        {"id": "c1", "name": "charge_card", "input": {"customer": "8812", "cents": 4900}},
        {"id": "c2", "name": "charge_card", "input": {"customer": "8812", "cents": 4900}}
      ]},
      {"expect": {"c1": "executed", "c2": "collapsed"},
       "calls": [{"id": "c3", "name": "charge_card", "input": {"customer": "8812", "cents": 4900}}]},
      {"expect": {"c3": "replayed"}, "text": "Charged once."}
    ]},
    {"id": "t2", "user": "thanks", "steps": [{"text": "You're welcome."}]}
  ]
}`

func TestScriptedModelDrivesALoop(t *testing.T) {
	s, err := agentoncetest.ParseScript([]byte(chargeScript))
	if err != nil {
		t.Fatal(err)
	}
	m, err := agentoncetest.NewScriptedModel(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A stand-in for the harness: the first charge executes, a parallel
	// twin collapses, a later re-issue is replayed.
	seen := map[string]bool{}
	var results []agentoncetest.ToolResult
	var finals, turns []string
	for {
		step, err := m.Next(ctx, results)
		if errors.Is(err, agentoncetest.ErrScriptDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if step.User != "" {
			turns = append(turns, step.Turn)
		}
		if step.Final() {
			finals = append(finals, step.Text)
			results = nil
			continue
		}
		results = nil
		inStep := map[string]bool{}
		for _, c := range step.Calls {
			status := "executed"
			switch {
			case inStep[string(c.Input)]:
				status = "collapsed"
			case seen[string(c.Input)]:
				status = "replayed"
			}
			inStep[string(c.Input)] = true
			results = append(results, agentoncetest.ToolResult{CallID: c.ID, Status: status})
		}
		for k := range inStep {
			seen[k] = true
		}
	}
	if strings.Join(finals, "|") != "Charged once.|You're welcome." {
		t.Errorf("final texts = %q; want [Charged once. You're welcome.]", finals)
	}
	if strings.Join(turns, ",") != "1,t2" {
		t.Errorf("turn ids = %q; want [1 t2]", turns)
	}
	if n := len(m.Transcript()); n != 4 {
		t.Errorf("len(Transcript()) = %d; want 4", n)
	}
	if _, err := m.Next(ctx, nil); !errors.Is(err, agentoncetest.ErrScriptDone) {
		t.Errorf("Next after the end = %v; want ErrScriptDone", err)
	}
}

func TestScriptedModelChecksResults(t *testing.T) {
	s, _ := agentoncetest.ParseScript([]byte(chargeScript))
	ctx := context.Background()
	r := func(id, status string) agentoncetest.ToolResult {
		return agentoncetest.ToolResult{CallID: id, Status: status}
	}
	for _, tc := range []struct {
		name    string
		results []agentoncetest.ToolResult
		errHas  string
	}{
		{"missing", []agentoncetest.ToolResult{r("c1", "executed")}, `no result for call "c2"`},
		{"stranger", []agentoncetest.ToolResult{r("c1", "executed"), r("c2", "collapsed"), r("c9", "executed")}, `"c9"`},
		{"twice", []agentoncetest.ToolResult{r("c1", "executed"), r("c1", "executed")}, `two results for call "c1"`},
		{"expect", []agentoncetest.ToolResult{r("c1", "executed"), r("c2", "executed")}, `call "c2": status "executed"; want "collapsed"`},
	} {
		m, _ := agentoncetest.NewScriptedModel(s)
		if _, err := m.Next(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err := m.Next(ctx, tc.results)
		if !errors.Is(err, agentoncetest.ErrUnexpectedResults) || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%s: Next(%v) error = %v; want ErrUnexpectedResults containing %s", tc.name, tc.results, err, tc.errHas)
		}
		// A refused Next does not advance: the right results still work.
		if _, err := m.Next(ctx, []agentoncetest.ToolResult{r("c2", "collapsed"), r("c1", "executed")}); err != nil {
			t.Errorf("%s: Next with the right results after a refusal: %v", tc.name, err)
		}
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct{ in, errHas string }{
		{`{"turns": [`, "at byte 11: unexpected end"},
		{``, "at byte 0: unexpected end"},
		{`{"turns": [{"steps": [{"text": "hi"}]}], "extra": 1}`, `unknown field "extra"`},
		{`{"turns": "no"}`, "byte 14"},
		{`{"turns": []}`, "no turns"},
		{`{"turns": [{"steps": []}]}`, "turn 1: no steps"},
		{`{"turns": [{"steps": [{"calls": [{"id": "a", "name": "t", "input": {}}]}]}]}`, "turn 1 step 1: the last step must be a final answer"},
		{`{"turns": [{"steps": [{"text": "x"}, {"text": "y"}]}]}`, "turn 1 step 1: only the last step"},
		{`{"turns": [{"steps": [{"calls": [{"name": "t"}]}, {"text": "y"}]}]}`, "turn 1 step 1 call 1: no id"},
		{`{"turns": [{"steps": [{"calls": [{"id": "a"}]}, {"text": "y"}]}]}`, `call 1 (id "a"): no tool name`},
		{`{"turns": [{"steps": [{"calls": [{"id": "a", "name": "t"}, {"id": "a", "name": "t"}]}, {"text": "y"}]}]}`, `id "a" repeats`},
		{`{"turns": [{"steps": [{"calls": [{"id": "a", "name": "t"}]}, {"expect": {"b": "executed"}, "text": "y"}]}]}`, `expect names call "b"`},
		{`{"turns": [{"steps": [{"text": "x"}]}]} {}`, "text after the script"},
	} {
		_, err := agentoncetest.ParseScript([]byte(tc.in))
		if !errors.Is(err, agentoncetest.ErrBadScript) || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("ParseScript(%s) error = %v; want ErrBadScript containing %q", tc.in, err, tc.errHas)
		}
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(chargeScript), 0o600)
	os.WriteFile(bad, []byte(`{"turns": [}`), 0o600)
	if s, err := agentoncetest.LoadScript(good); err != nil || len(s.Turns) != 2 || s.Session != "s1" {
		t.Errorf("LoadScript(good) = %d turns, session %q, %v; want 2 turns, s1", len(s.Turns), s.Session, err)
	}
	if _, err := agentoncetest.LoadScript(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadScript(bad) error = %v; want one naming %s", err, bad)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(chargeScript))
	f.Add([]byte(`{"turns":[{"steps":[{"text":"x"}]}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := agentoncetest.ParseScript(in)
		if err != nil {
			if !errors.Is(err, agentoncetest.ErrBadScript) {
				t.Fatalf("ParseScript error %v does not wrap ErrBadScript", err)
			}
			return
		}
		// Stability: an accepted script survives a round trip unchanged.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := agentoncetest.ParseScript(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		b2, _ := json.Marshal(s2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the script:\n%s\n%s", b, b2)
		}
		// Every accepted script can be played to the end.
		m, err := agentoncetest.NewScriptedModel(s)
		if err != nil {
			t.Fatal(err)
		}
		var results []agentoncetest.ToolResult
		for range 10000 {
			step, err := m.Next(context.Background(), results)
			if errors.Is(err, agentoncetest.ErrScriptDone) {
				return
			}
			if err != nil {
				// Only Expect can refuse the "executed" answers below.
				if !errors.Is(err, agentoncetest.ErrUnexpectedResults) {
					t.Fatal(err)
				}
				return
			}
			results = nil
			for _, c := range step.Calls {
				results = append(results, agentoncetest.ToolResult{CallID: c.ID, Status: "executed"})
			}
		}
		t.Fatal("script did not end in 10000 steps")
	})
}
