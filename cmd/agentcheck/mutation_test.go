package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
	"github.com/agentonce/agentonce/internal/pgtest"
)

// mutationsEnv runs every mutation of the list (RELIABILITY.md records
// the results); with only checkEnv set, the first one runs.
const mutationsEnv = "AGENTONCE_MUTATIONS"

// A mutation is a bug planted in a copy of the module, which the checker
// must catch: each edit replaces text that must occur exactly once in its
// file, so that a change of the code makes the list fail loudly rather
// than plant nothing. The production code carries no switch for them.
type mutation struct {
	name string
	// edits are applied in order, each to its file (relative to the
	// module's root).
	edits []edit
	// The checker's run: store, seed, duration, scenarios and more flags.
	store, seed, duration, scenarios string
	args                             []string
	// catch lists the rules any of which counts as caught.
	catch []string
	// goTest, instead of a checker run, names the package whose tests
	// must fail: for a bug no checker run of a minute can meet.
	goTest string
}

type edit struct{ file, old, new string }

var mutations = []mutation{
	{
		name:  "transport sends the attempt id as the key",
		edits: []edit{{"harness/downstream/transport.go", "r2.Header.Set(keyHeader, ai.Key.String())", "r2.Header.Set(keyHeader, ai.ID)"}},
		store: "bolt", seed: "11", duration: "8s", scenarios: "refuse-retry,duplicates",
		catch: []string{check.RuleKeys, check.RuleDuplicate},
	},
	{
		name:  "collapse by key alone",
		edits: []edit{{"harness/call.go", "fk := flightKey{p.d.Key, p.d.Fingerprint}\n\tif job", "fk := flightKey{key: p.d.Key}\n\tif job"}},
		store: "bolt", seed: "11", duration: "12s", scenarios: "stepkey",
		catch: []string{check.RuleWrongOutput},
	},
	{
		name:  "Unkeyed maybe-executed retried",
		edits: []edit{{"harness/attempt.go", "	{retryclass.MaybeExecuted, ranAny, unkeyed, reconcileFirst, journal.StateUnknown, retryclass.MaybeExecuted, \"\"},\n", ""}},
		store: "bolt", seed: "11", duration: "12s", scenarios: "refuse-retry,mixed,hangup",
		catch: []string{check.RuleDuplicate},
	},
	{
		name:  "lease renewal off",
		edits: []edit{{"journal/lease/lease.go", "k.timer = time.AfterFunc(ttl/3, k.tick)", "k.timer = time.AfterFunc(time.Hour, k.tick)"}},
		store: "postgres", seed: "11", duration: "15s", scenarios: "outlive-lease",
		catch: []string{check.RuleDuplicate, check.RuleLeaseLost, check.RuleWrongOutput},
	},
	{
		name:  "suppression guard off",
		edits: []edit{{"journal/internal/machine/begin.go", "	if s.State != journal.StateSuppressed || s.Key == req.Key || journal.Expired(s, now) {", "	if true || s.State != journal.StateSuppressed || s.Key == req.Key || journal.Expired(s, now) {"}},
		store: "bolt", seed: "11", duration: "12s", scenarios: "guard",
		catch: []string{check.RuleGuard},
	},
	{
		name: "checksum not verified",
		edits: []edit{{"journal/internal/codec/codec.go", "		if err := checkSeal(val); err != nil {\n			return r, err\n		}",
			"		_ = checkSeal(val)"}},
		store: "bolt", seed: "11", duration: "8s", scenarios: "mixed,duplicates", args: []string{"-corrupt", "5"},
		catch: []string{check.RuleWrongOutput},
	},
	{
		// The server side, judged with the harness in -downstream
		// middleware: a middleware that stores no answer runs every retry.
		name:  "middleware stores no answer",
		edits: []edit{{"idempotency/run.go", "return resp.Status >= 500 && !m.o.StoreServerErrors", "return resp.Status >= 200 && !m.o.StoreServerErrors"}},
		store: "bolt", seed: "11", duration: "8s", scenarios: "refuse-retry,mixed",
		args:  []string{"-downstream", "middleware", "-server-store", "bolt"},
		catch: []string{check.RuleDuplicate},
	},
	{
		// The approval gate, through the approval scenario: one approval
		// short runs a tool that needs one as soon as it is re-issued.
		name: "approvals counted one short",
		edits: []edit{{"journal/internal/machine/begin.go", "	case cur.State == journal.StateAwaiting && len(cur.Approval.Given) < cur.Approval.Need:",
			"	case cur.State == journal.StateAwaiting && len(cur.Approval.Given)+1 < cur.Approval.Need:"}},
		store: "bolt", seed: "11", duration: "8s", scenarios: "approval",
		catch: []string{check.RuleUnapproved},
	},
	{
		name: "approval of another input accepted",
		edits: []edit{{"journal/internal/machine/apply.go", "	case res.State == journal.StatePending && res.Fingerprint != cur.Fingerprint:",
			"	case false && res.Fingerprint != cur.Fingerprint:"}},
		store: "bolt", seed: "11", duration: "8s", scenarios: "approval",
		catch: []string{check.RuleForged},
	},
	{
		// Records live for days (RecordTTL), so a checker run never sees
		// one expire: the conformance suite, whose clock it owns, does.
		name:   "expiry ignoring the state",
		edits:  []edit{{"journal/expiry.go", "	return false\n}", "	return !r.Expires.IsZero() && !now.Before(r.Expires)\n}"}},
		goTest: "./journal/memory",
	},
}

// TestMutations plants each bug of the list in a copy of the module,
// builds agentcheck from it and runs it: the checker must report one of
// the mutation's rules within 60 s of starting. About 30 s a mutation; off
// by default, like TestCheck.
func TestMutations(t *testing.T) {
	list := mutations
	switch {
	case os.Getenv(mutationsEnv) == "1":
	case os.Getenv(checkEnv) == "1":
		list = mutations[:1]
	default:
		t.Skip(checkEnv + "=1 runs the first mutation; " + mutationsEnv + "=1 every one (about 30 s each)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pg := os.Getenv(pgtest.URLEnv)
	for _, m := range list {
		t.Run(m.name, func(t *testing.T) {
			if m.store == "postgres" && pg == "" {
				t.Skip(pgtest.URLEnv + " is not set")
			}
			dir := t.TempDir()
			if err := copyModule(root, dir); err != nil {
				t.Fatal(err)
			}
			for _, e := range m.edits {
				path := filepath.Join(dir, e.file)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if n := bytes.Count(b, []byte(e.old)); n != 1 {
					t.Fatalf("%s: the text to change occurs %d times in %s; want once (update the list in mutation_test.go):\n%s", m.name, n, e.file, e.old)
				}
				if err := os.WriteFile(path, bytes.Replace(b, []byte(e.old), []byte(e.new), 1), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bin := filepath.Join(dir, "agentcheck-mutant")
			build := exec.Command("go", "build", "-o", bin, "./cmd/agentcheck")
			build.Dir = dir
			// The copy builds as a user's checkout would, outside the
			// workspace: its go.mod may select versions the workspace
			// does not (a fresh machine has only the workspace's in its
			// module cache), so it fetches through the machine's proxy.
			build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build of the mutant: %v\n%s", err, out)
			}
			if m.goTest != "" {
				test := exec.Command("go", "test", "-count=1", m.goTest)
				test.Dir, test.Env = dir, build.Env
				out, err := test.CombinedOutput()
				if err == nil {
					t.Errorf("%s: go test %s passed; want it to fail\n%s", m.name, m.goTest, out)
				}
				var failed []string
				for l := range strings.SplitSeq(string(out), "\n") {
					if strings.HasPrefix(l, "--- FAIL") {
						failed = append(failed, strings.TrimPrefix(l, "--- FAIL: "))
					}
				}
				t.Logf("%s: go test %s fails: %s", m.name, m.goTest, strings.Join(failed, ", "))
				return
			}
			start := time.Now()
			args := append([]string{"-json", "-store", m.store, "-seed", m.seed, "-duration", m.duration,
				"-scenarios", m.scenarios, "-pg", pg, "-history", filepath.Join(dir, "history.jsonl")}, m.args...)
			cmd := exec.Command(bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			took := time.Since(start)
			var sum check.JSONSummary
			if jerr := json.Unmarshal(stdout.Bytes(), &sum); jerr != nil {
				t.Fatalf("agentcheck: %v, output not JSON (%v)\nstderr:\n%s", err, jerr, stderr.String())
			}
			caught := map[string]int{}
			for _, rep := range sum.Reports {
				for _, v := range rep.Violations {
					caught[v.Rule]++
				}
			}
			var hit []string
			for rule, n := range caught {
				if slices.Contains(m.catch, rule) {
					hit = append(hit, fmt.Sprintf("%s %d", rule, n))
				}
			}
			slices.Sort(hit)
			t.Logf("%s: %d intents, %d effects in %s; violations %v", m.name, sum.Intents, sum.Effects, took.Round(time.Second), caught)
			switch {
			case len(hit) == 0:
				t.Errorf("%s: not caught: violations %v; want one of %v", m.name, caught, m.catch)
			case took > 60*time.Second:
				t.Errorf("%s: caught (%s) but only after %s; want within 60 s", m.name, strings.Join(hit, ", "), took.Round(time.Second))
			}
		})
	}
}

// copyModule copies the module at root into dir: its files, without .git
// and without the directories of other modules (their own go.mod).
func copyModule(root, dir string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "go.work") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestMutationListCurrent: every mutation's text is in the tree once, so
// that a refactor that moves the code fails here, in every run, rather
// than only when the mutations run.
func TestMutationListCurrent(t *testing.T) {
	for _, m := range mutations {
		for _, e := range m.edits {
			b, err := os.ReadFile(filepath.Join("../..", e.file))
			if err != nil {
				t.Errorf("%s: %v", m.name, err)
				continue
			}
			if n := bytes.Count(b, []byte(e.old)); n != 1 {
				t.Errorf("%s: the text to change occurs %d times in %s; want once (update the list):\n%s", m.name, n, e.file, e.old)
			}
		}
	}
}
