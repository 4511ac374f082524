package powerloss

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// TestPowerLossAtEverySync cuts the power at each fdatasync an agent
// process makes, from creating its journal to recording the outcome of
// one call, for each effect kind: in run n the n-th sync fails and nothing
// it would have made durable is. These are the crash points inside the
// journal's own commits, between the named points of TestPowerLossMatrix.
// Whatever the process got to do and was told before the cut:
//
//   - a journal on which a call was made still opens;
//   - an Unkeyed tool that started has its record on disk;
//   - an answer of success survives as a succeeded record, replayed;
//   - a call answered "rejected" did not run its tool;
//   - the restarted agent answers from what is on disk, never runs an
//     Unkeyed tool twice, and the downstream sees at most one effect.
//
// The last run makes fewer syncs than n: no cut, and the call succeeds.
func TestPowerLossAtEverySync(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for n := 1; ; n++ {
				if n > 50 {
					t.Fatalf("one call made more than 50 syncs")
				}
				cut := true
				t.Run(fmt.Sprintf("sync-%d", n), func(t *testing.T) { cut = powerCutAtSync(t, k, n) })
				if !cut {
					break
				}
			}
		})
	}
}

// powerCutAtSync runs one agent process with the power cut at its n-th
// sync and checks what the cut left; cut reports whether the process made
// n syncs.
func powerCutAtSync(t *testing.T, k kind, n int) (cut bool) {
	m := mount(t)
	const name = "agent.journal"
	m.CutAtSync(n)
	d := &service{protected: k.effect != journal.Unkeyed, applied: map[string]int{}}
	c := startChild(t, "TestPowerChild", matrixChildEnv+"="+filepath.Join(m.Dir(), name)+"|"+k.name+"|"+afterOutcome)
	var first firstRun
	var failed string // why the child stopped before answering, if it did
	for ended := false; !ended; {
		line, ok := c.nextOrEnd()
		if !ok {
			failed = "died"
			break
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "key":
			first.key = rest
		case "started":
			first.started = true
		case "effect":
			first.effect = true
			d.effect(rest)
		case "returned":
			first.returned = rest
		case "crash":
			ended = true
		case "error":
			failed, ended = rest, true
		default:
			t.Fatalf("child: %s", line)
		}
	}
	cut = m.Cut()
	m.PowerCut()
	c.kill()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if !cut && !strings.HasPrefix(first.returned, "succeeded ") {
		t.Fatalf("without a cut the call ended %q (%s); want succeeded", first.returned, failed)
	}
	said, _, _ := strings.Cut(first.returned, " ")
	if said == "rejected" && first.started {
		t.Errorf("the first call was answered %q but its tool started", first.returned)
	}
	path := filepath.Join(m.Backing(), name)
	onDisk := checkJournalAtSync(t, path, k, first)

	answers, closeHarness, err := callTimes(context.Background(), path, k, hooks{
		run: func(key string) string {
			if first.key != "" && key != first.key {
				t.Errorf("restarted tool ran with key %s; the first process had %s", key, first.key)
			}
			d.effect(key)
			return output(key)
		},
		reconcile: func(key string) (string, bool) {
			if d.happened(key) {
				return output(key), true
			}
			return "", false
		},
	}, 2)
	if err != nil {
		t.Fatalf("restart on the journal the cut left: %v", err)
	}
	closeHarness()
	a := answers[0]
	switch a.said {
	case "succeeded", "replayed":
		if a.output != output(a.key) || d.effects() != 1 {
			t.Errorf("restart said %s %s with %d effects downstream; want output %s and 1 effect", a.said, a.output, d.effects(), output(a.key))
		}
	case "unknown":
		if k.effect != journal.Unkeyed || k.reconcile || !first.started {
			t.Errorf("restart said unknown for %s after the first process started its tool: %v; want unknown only for Unkeyed without Reconcile after a start", k.name, first.started)
		}
		if want := map[bool]int{true: 1, false: 0}[first.effect]; d.effects() != want {
			t.Errorf("restart said unknown with %d effects downstream; want %d", d.effects(), want)
		}
	default:
		t.Errorf("restart said %s; want succeeded, replayed or unknown", a.said)
	}
	if said == "succeeded" && a.said != "replayed" {
		t.Errorf("the first call was answered succeeded, but the restart said %s; want replayed", a.said)
	}
	if again := map[string]string{"succeeded": "replayed", "replayed": "replayed", "unknown": "unknown"}[a.said]; answers[1].said != again {
		t.Errorf("second call after the restart said %s; want %s", answers[1].said, again)
	}
	if k.effect == journal.Unkeyed && len(d.requests) > 1 {
		t.Errorf("Unkeyed tool reached the downstream %d times; want at most once", len(d.requests))
	}
	t.Logf("cut %v; first process: key %v, started %v, effect %v, answered %q%s; on disk: %s; restart: %s, then %s; downstream requests %d, effects %d",
		cut, first.key != "", first.started, first.effect, said, map[bool]string{true: ", stopped: " + failed}[failed != ""],
		onDisk, a.said, answers[1].said, len(d.requests), d.effects())
	return cut
}

// checkJournalAtSync opens the journal the cut left, read-only, checks
// the first process's record and says what it found. A cut before the
// journal's creation was durable leaves no journal at its path (OpenBolt
// builds it beside the path and links it in place): the restart creates
// it, which must succeed.
func checkJournalAtSync(t *testing.T, path string, k kind, first firstRun) (found string) {
	t.Helper()
	st, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		if first.key != "" {
			t.Fatalf("the journal a call was made on does not open after the cut: %v", err)
		}
		if _, serr := os.Stat(path); serr == nil {
			t.Fatalf("the cut left a file at the journal's path that does not open: %v", err)
		}
		rw, err := bolt.Open(path, nil)
		if err != nil {
			t.Fatalf("restart after a cut during the journal's creation: %v; want a new journal", err)
		}
		rw.Close()
		return "no journal yet; the restart created it"
	}
	defer st.Close()
	if first.key == "" {
		return "no call made"
	}
	key, err := uuid.Parse(first.key)
	if err != nil {
		t.Fatalf("child reported key %q: %v", first.key, err)
	}
	rec, err := st.Get(context.Background(), key)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get(%s) after the cut: %v", key, err)
	}
	if err != nil {
		if first.started && k.effect == journal.Unkeyed {
			t.Errorf("Unkeyed tool started but its write-ahead record is not on disk after the cut")
		}
		if strings.HasPrefix(first.returned, "succeeded ") {
			t.Errorf("the first call was answered %q but no record is on disk", first.returned)
		}
		return "no record"
	}
	if rec.Intent.Tool != matrixTool {
		t.Errorf("record after the cut is for tool %q; want %q", rec.Intent.Tool, matrixTool)
	}
	if rec.State == journal.StateSucceeded && string(rec.Output) != output(first.key) {
		t.Errorf("succeeded record after the cut has output %s; want %s", rec.Output, output(first.key))
	}
	if strings.HasPrefix(first.returned, "succeeded ") && rec.State != journal.StateSucceeded {
		t.Errorf("the first call was answered %q but the record on disk is %s", first.returned, rec.State)
	}
	return fmt.Sprintf("%s with %d attempt(s)", rec.State, len(rec.Attempts))
}
