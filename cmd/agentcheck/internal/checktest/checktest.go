// Package checktest runs a built agentcheck in a test and fails the test
// on any violation or problem of the run, for the tests of cmd/agentcheck
// and of cmd/agentcheck/redis.
package checktest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
)

// Run runs the agentcheck binary bin with -json, -history hist and args,
// and fails t on a violation, a problem, a run that checked no intent or
// no effect, or an exit status that none of these explains. It logs the
// broken declarations (check.RuleSettleBroken, not failures) and, when t
// failed, where the history is. It returns the summary.
func Run(t testing.TB, bin, hist string, args ...string) check.JSONSummary {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-json", "-history", hist}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var sum check.JSONSummary
	if jerr := json.Unmarshal(stdout.Bytes(), &sum); jerr != nil {
		t.Fatalf("agentcheck %q: %v, output not JSON (%v)\nstderr:\n%s", args, err, jerr, stderr.String())
	}
	if sum.Intents == 0 || sum.Effects == 0 {
		t.Errorf("agentcheck checked %d intents with %d effects; want some of each", sum.Intents, sum.Effects)
	}
	for _, rep := range sum.Reports {
		for _, v := range rep.Violations {
			t.Errorf("seed %d %s %s: %s, intent %s (%s, %s): %s", v.Seed, v.Store, rep.Downstream, v.Rule, v.Intent, v.Scenario, v.Tool, v.Detail)
		}
		for _, p := range rep.Problems {
			t.Errorf("seed %d %s %s: problem: %s", rep.Seed, rep.Store, rep.Downstream, p)
		}
		// The downstream was later than its tool declared (a loaded
		// machine): said, not failed.
		for _, v := range rep.Broken {
			t.Logf("seed %d %s: %s, intent %s (%s, %s): %s", v.Seed, v.Store, v.Rule, v.Intent, v.Scenario, v.Tool, v.Detail)
		}
	}
	if err != nil && !t.Failed() {
		t.Errorf("agentcheck exited with %v and no violation\nstderr:\n%s", err, stderr.String())
	}
	if t.Failed() {
		t.Logf("history: %s", hist)
	}
	return sum
}
