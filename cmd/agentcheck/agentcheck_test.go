package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
	"github.com/agentonce/agentonce/cmd/agentcheck/internal/checktest"
	"github.com/agentonce/agentonce/internal/pgtest"
)

// checkEnv, the switch of the long suites, turns TestCheck on: .ci/run
// sets it. It is off by default because the run takes a minute and a half
// of real time, too long for every go test of a developer.
const checkEnv = "AGENTONCE_LONG"

// checkLease is the workers' lease in TestCheck, three times agentcheck's
// default: a live owner renews at a third of it, and on a saturated CI
// machine (load 20 on 2 cores) a PostgreSQL round trip took 430 ms, so a
// 500 ms lease was lost by an owner that was alive and renewing (seed 1
// postgres, i0001, live-owner-lost-lease). The tools' durations are drawn
// around the lease, so every scenario keeps its shape.
const checkLease = "1500ms"

// TestCheck builds agentcheck and runs it for a few fixed seeds on bbolt
// and, when AGENTONCE_PG_URL is set, on PostgreSQL (about 75 s in all). It
// fails on any violation, printing each one's seed, rule and detail, and
// keeps the histories for reading.
func TestCheck(t *testing.T) {
	if os.Getenv(checkEnv) != "1" {
		t.Skip(checkEnv + "=1 runs the fault checker (about 75 s; .ci/run does)")
	}
	// The histories outlive a failed test, for reading.
	dir, err := os.MkdirTemp("", "agentcheck-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	bin := filepath.Join(dir, "agentcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runs := []struct {
		store    string
		seed     int
		duration string
	}{
		{"bolt", 1, "15s"},
		{"bolt", 2, "15s"},
		{"postgres", 1, "20s"},
		{"postgres", 2, "15s"},
	}
	pg := os.Getenv(pgtest.URLEnv)
	for _, r := range runs {
		t.Run(fmt.Sprintf("%s/seed=%d", r.store, r.seed), func(t *testing.T) {
			if r.store == "postgres" && pg == "" {
				t.Skip(pgtest.URLEnv + " is not set")
			}
			hist := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", r.store, r.seed))
			cmd := exec.Command(bin, "-json", "-store", r.store, "-seed", fmt.Sprint(r.seed),
				"-duration", r.duration, "-lease", checkLease, "-history", hist, "-pg", pg)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var sum check.JSONSummary
			if jerr := json.Unmarshal(stdout.Bytes(), &sum); jerr != nil {
				t.Fatalf("agentcheck: %v, output not JSON (%v)\nstderr:\n%s", err, jerr, stderr.String())
			}
			if sum.Intents == 0 || sum.Effects == 0 {
				t.Errorf("agentcheck checked %d intents with %d effects; want some of each", sum.Intents, sum.Effects)
			}
			for _, rep := range sum.Reports {
				for _, v := range rep.Violations {
					t.Errorf("seed %d %s: %s, intent %s (%s, %s): %s", v.Seed, v.Store, v.Rule, v.Intent, v.Scenario, v.Tool, v.Detail)
				}
				for _, p := range rep.Problems {
					t.Errorf("seed %d %s: problem: %s", rep.Seed, rep.Store, p)
				}
				// The downstream was later than its tool declared (a
				// loaded machine): said, not failed.
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
		})
	}
}

// TestCheckMiddleware runs agentcheck -downstream middleware: the
// idempotency middleware on a bbolt journal (and, when AGENTONCE_PG_URL is
// set, on PostgreSQL) keeps the Idempotency-Key contract behind the fault
// script, 8 s of faults each, 7–20 s a store by the load. The agents' journal is
// bbolt in both (TestCheck runs them on PostgreSQL): the server's store is
// what is under test. On Redis, cmd/agentcheck/redis's test runs it.
func TestCheckMiddleware(t *testing.T) {
	if os.Getenv(checkEnv) != "1" {
		t.Skip(checkEnv + "=1 runs the fault checker (.ci/run does)")
	}
	dir, err := os.MkdirTemp("", "agentcheck-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	bin := filepath.Join(dir, "agentcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pg := os.Getenv(pgtest.URLEnv)
	for _, st := range []string{"bolt", "postgres"} {
		t.Run(st, func(t *testing.T) {
			if st == "postgres" && pg == "" {
				t.Skip(pgtest.URLEnv + " is not set")
			}
			checktest.Run(t, bin, filepath.Join(dir, "middleware-"+st+".jsonl"),
				"-store", "bolt", "-downstream", "middleware", "-server-store", st, "-seed", "3", "-duration", "8s", "-pg", pg)
		})
	}
}

// TestCheckFailover runs agentcheck on a PostgreSQL primary with a
// synchronous standby of its own (pgtest.StartPair): halfway through, the
// primary is SIGKILLed and the standby promoted (-failover), and the
// workers reconnect through the multi-host URL, under the usual kills and
// backend terminations. No rule may break.
func TestCheckFailover(t *testing.T) {
	if os.Getenv(checkEnv) != "1" {
		t.Skip(checkEnv + "=1 runs the fault checker (.ci/run does)")
	}
	pair := pgtest.StartPair(t, true)
	dir, err := os.MkdirTemp("", "agentcheck-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	bin := filepath.Join(dir, "agentcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sum := checktest.Run(t, bin, filepath.Join(dir, "failover.jsonl"), "-store", "postgres", "-seed", "5",
		"-duration", "15s", "-lease", checkLease, "-pg", pair.URL, "-failover", pair.FailoverCommand())
	for _, rep := range sum.Reports {
		if rep.Failovers != 1 {
			t.Errorf("seed %d: %d failovers in the history; want 1", rep.Seed, rep.Failovers)
		}
		t.Logf("seed %d: %d intents, %d calls, %d effects, %d kills, %d backends terminated, %d failover; answers %v",
			rep.Seed, rep.Intents, rep.Calls, rep.Effects, rep.Kills, rep.Terminations, rep.Failovers, rep.Answers)
	}
}
