// Command testrun runs the tests of every module of the repository, as
// README.md's test command, and ends by saying what was skipped and why.
//
//	go run ./internal/testrun [go test flags]
//
// It runs go test -race -count=1 (and the flags given, such as -run) over
// the packages of every module of the workspace, then over those of the
// genkit adapter's own workspace, and prints what go test prints without
// -v: a line per package, a failing package's whole output. Without
// AGENTONCE_LONG=1 it leaves out the modules whose SDKs are most of a cold
// build (heavy). A passing package hides its tests' t.Skip messages, so
// it ends with one line per switch that was off: the tests skipped
// because AGENTONCE_LONG=1, AGENTONCE_PG_URL or AGENTONCE_REDIS_URL was
// not set, or PostgreSQL's server binaries were missing and
// AGENTONCE_REQUIRE_PG_STANDBY did not make that a failure, those
// AGENTONCE_LONG=1 runs at full size (their log names the switch) and the
// modules left out. It exits 1 when a test or a build
// failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// heavy are the modules left out without AGENTONCE_LONG=1: their SDKs
// (eino's, OpenAI's, Anthropic's, stripe-go, and genkit's in a workspace
// of its own) are more than half of the code a cold build compiles;
// bench/maxfired builds most of them together with DBOS.
var heavy = []string{"adapters/anthropic", "adapters/eino", "adapters/genkit", "adapters/openai", "adapters/stripe", "bench/maxfired", "examples/payment-server"}

func main() {
	flags := append([]string{"-race", "-count=1"}, os.Args[1:]...)
	gowork, err := exec.Command("go", "env", "GOWORK").Output()
	root := filepath.Dir(strings.TrimSpace(string(gowork)))
	var out []byte
	if err == nil && filepath.IsAbs(root) {
		list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}")
		list.Dir = root
		out, err = list.Output()
	}
	if err != nil || !filepath.IsAbs(root) {
		fmt.Fprintln(os.Stderr, "testrun: no go.work found (run it inside the repository)", err)
		os.Exit(2)
	}
	long := os.Getenv("AGENTONCE_LONG") == "1"
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, dir); err == nil && !long && slices.Contains(heavy, filepath.ToSlash(rel)) {
			continue
		}
		pkgs = append(pkgs, dir+"/...")
	}
	start := time.Now()
	r := newReport(os.Stdout)
	ok := run(r, root, append(flags, pkgs...))
	if long {
		ok = run(r, filepath.Join(root, "adapters/genkit"), append(flags, "./...")) && ok // its own workspace
	} else {
		r.leftOut = heavy
	}
	r.summary(os.Getenv)
	fmt.Printf("tests of every module: %s in %s\n", map[bool]string{true: "ok", false: "FAIL"}[ok], time.Since(start).Round(time.Second))
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", r.counts["pass"], r.counts["fail"], r.counts["skip"])
	if !ok {
		os.Exit(1)
	}
}

// run runs go test -json with args in dir, reporting its events to r.
func run(r *report, dir string, args []string) bool {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		return false
	}
	readErr := r.read(out)
	if err := cmd.Wait(); err != nil || readErr != nil {
		if readErr != nil {
			fmt.Fprintln(os.Stderr, "testrun: reading go test -json:", readErr)
		}
		return false
	}
	return true
}

// event is a line of go test -json (cmd/test2json), build events included.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// switches are the environment variables whose skips the summary names,
// each with what it turns on.
var switches = []struct{ name, what string }{
	{"AGENTONCE_LONG", "the long suites: the fault checker, the browser test, the SDK-heavy modules, full-size runs; CI sets it"},
	{"AGENTONCE_PG_URL", "the PostgreSQL journal's tests, on a server you own (README.md)"},
	{"AGENTONCE_REDIS_URL", "the Redis journal's tests, on a server with --appendonly yes --appendfsync always"},
	{"AGENTONCE_REQUIRE_PG_STANDBY", "a failure instead of a skip when the failover tests find no PostgreSQL server binaries " +
		"to start a primary and a standby from (apt-get install postgresql); CI sets it"},
}

var (
	envName = regexp.MustCompile(`AGENTONCE_[A-Z_]+`)
	logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)
)

// report prints go test's per-package lines and gathers the skips.
type report struct {
	w       io.Writer
	output  map[string][]string       // package → its output so far
	lines   map[string][]string       // package → its own lines (no test's)
	tests   map[[2]string][]string    // package, test → its output so far
	skipped map[string]map[string]int // switch → package → tests skipped
	short   map[string]map[string]int // switch → package → tests shortened
	leftOut []string                  // modules not run without AGENTONCE_LONG=1
	counts  map[string]int            // "pass", "fail", "skip" → top-level tests
}

func newReport(w io.Writer) *report {
	return &report{w: w, output: map[string][]string{}, lines: map[string][]string{}, tests: map[[2]string][]string{},
		skipped: map[string]map[string]int{}, short: map[string]map[string]int{}, counts: map[string]int{}}
}

// read reports every event of a go test -json stream.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(r.w, sc.Text()) // not an event: pass it on
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "output":
		r.output[e.Package] = append(r.output[e.Package], e.Output)
		if e.Test == "" {
			r.lines[e.Package] = append(r.lines[e.Package], e.Output)
		} else {
			k := [2]string{e.Package, e.Test}
			r.tests[k] = append(r.tests[k], e.Output)
		}
	case e.Test != "" && (e.Action == "skip" || e.Action == "pass" || e.Action == "fail"):
		k := [2]string{e.Package, e.Test}
		out := r.tests[k]
		delete(r.tests, k)
		if strings.Contains(e.Test, "/") {
			return // a subtest: its parent is counted
		}
		r.counts[e.Action]++
		switch e.Action {
		case "skip":
			count(r.skipped, reason(out), e.Package)
		case "pass":
			if slices.ContainsFunc(out, func(l string) bool { return strings.Contains(l, "AGENTONCE_LONG=1") }) {
				count(r.short, "AGENTONCE_LONG", e.Package)
			}
		}
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		r.done(e)
	}
}

// done prints a package's line, and its whole output when it failed.
func (r *report) done(e event) {
	out, lines := r.output[e.Package], r.lines[e.Package]
	delete(r.output, e.Package)
	delete(r.lines, e.Package)
	if e.Action != "fail" {
		for _, l := range lines {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "? ") {
				fmt.Fprint(r.w, l)
			}
		}
		return
	}
	for _, l := range out {
		if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- PASS") && !strings.HasPrefix(l, "--- SKIP") {
			fmt.Fprint(r.w, l)
		}
	}
	if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], "FAIL") {
		fmt.Fprintf(r.w, "FAIL\t%s\n", e.Package)
	}
}

// reason is the switch a skipped test's message names first, or "".
func reason(out []string) string {
	for _, l := range out {
		if !logLine.MatchString(l) {
			continue
		}
		if name := envName.FindString(l); name != "" {
			return name
		}
	}
	return ""
}

func count(m map[string]map[string]int, name, pkg string) {
	if m[name] == nil {
		m[name] = map[string]int{}
	}
	m[name][pkg]++
}

// summary prints a line per switch that was off and skipped or shortened
// tests; getenv reads the environment.
func (r *report) summary(getenv func(string) string) {
	for _, s := range switches {
		skipped, short := r.skipped[s.name], r.short[s.name]
		var leftOut []string
		if s.name == "AGENTONCE_LONG" {
			leftOut = r.leftOut
		}
		if getenv(s.name) != "" || len(skipped)+len(short)+len(leftOut) == 0 {
			continue
		}
		var parts []string
		if n, pkgs := total(skipped); n > 0 {
			parts = append(parts, fmt.Sprintf("%d tests in %s", n, pkgs))
		}
		if n, pkgs := total(short); n > 0 {
			parts = append(parts, fmt.Sprintf("%d run shortened in %s", n, pkgs))
		}
		if len(leftOut) > 0 {
			parts = append(parts, "the modules "+strings.Join(leftOut, ", ")+" not built (their SDKs are most of a cold build)")
		}
		line := "skipped: " + s.name + " is not set: " + strings.Join(parts, "; ")
		fmt.Fprintf(r.w, "%s. It turns on %s.\n", line, s.what)
	}
}

// total sums a switch's counts and names its packages, short.
func total(m map[string]int) (int, string) {
	n := 0
	var pkgs []string
	for p, c := range m {
		n += c
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(p, "github.com/agentonce/agentonce"), "/"))
	}
	sort.Strings(pkgs)
	for i, p := range pkgs {
		if p == "" {
			pkgs[i] = "agentonce"
		}
	}
	return n, strings.Join(pkgs, ", ")
}
