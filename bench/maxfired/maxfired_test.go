package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

// TestMain makes the test binary the sweep's worker too.
func TestMain(m *testing.M) {
	ordered()
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		worker.Main(os.Args[2:], runtimes)
	}
	os.Exit(m.Run())
}

// unguarded is the charge made plainly but reported as "with agentonce":
// the sweep must see its duplicates.
var unguarded = runtime{Name: "unguarded", Plain: serverPlain, Once: serverPlain}

func init() { runtimes = append(runtimes, unguarded) }

func shortSweep(t *testing.T, pairs bool, rts ...runtime) []row {
	t.Helper()
	rows, err := sweep(context.Background(), config{runtimes: rts, random: 2, crashes: 2, seed: 7, parallel: 4, pairs: pairs,
		worker: os.Args[0], pgURL: os.Getenv("AGENTONCE_PG_URL")})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Every runtime, killed at each of its crash points and at the effect
// twice running: plain, the charge fires again on a resume; with
// agentonce, once, and the caller ends up holding it.
func TestSweep(t *testing.T) {
	var rts []runtime
	for _, r := range runtimes {
		if r.Name != unguarded.Name {
			rts = append(rts, r)
		}
	}
	var table strings.Builder
	rows := shortSweep(t, false, rts...)
	printTable(&table, rows)
	t.Log("\n" + table.String())
	for _, r := range rows {
		if r.skipped != "" {
			t.Logf("%s skipped: %s", r.name, r.skipped)
			continue
		}
		if r.once.max != 1 || len(r.once.failures) > 0 {
			t.Errorf("%s with agentonce: maxFired %d (worst: %s), not charged: %v; want 1, all charged", r.name, r.once.max, r.once.worst, r.once.failures)
		}
		if r.plain.max < 3 {
			t.Errorf("%s plain: maxFired %d; want 3 (two crashes at the effect, then a run to the end)", r.name, r.plain.max)
		}
		if r.once.points <= r.plain.points {
			t.Errorf("%s: %d crash points with agentonce, %d plain; want the journal's writes among them", r.name, r.once.points, r.plain.points)
		}
	}
}

// The sweep sees a duplicate where there is one: a runtime whose
// "with agentonce" is the plain charge is reported above 1, and with
// pairs a crash at the effect of the run that resumes a crash at the
// effect is among its schedules.
func TestSweepSeesDuplicates(t *testing.T) {
	rows := shortSweep(t, true, unguarded)
	if got := rows[0].once.max; got < 3 {
		t.Errorf("unguarded maxFired = %d; want 3", got)
	}
	// The run without a crash, its one point, the pair of it and the
	// point of its resume, the effect twice, 2 random.
	if got := rows[0].once.schedules; got != 6 {
		t.Errorf("unguarded schedules = %d; want 6", got)
	}
}
