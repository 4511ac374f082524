package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport runs a real go test -json over a module of its own, whose
// tests pass, fail, skip behind a switch or for another reason, and run
// shortened, or do not build, and checks what the report prints of it, a
// module left out too.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.24\n")
	write("a/a_test.go", `package a

import "testing"

func TestPass(t *testing.T) {}
func TestPG(t *testing.T) { t.Skip("AGENTONCE_PG_URL is not set") }
func TestPG2(t *testing.T) { t.Skip("AGENTONCE_PG_URL is not set") }
func TestLong(t *testing.T) { t.Skip("AGENTONCE_LONG=1 runs the hammer") }
func TestShort(t *testing.T) { t.Log("AGENTONCE_LONG=1 runs it with 100000 records; 5000 here") }
func TestChild(t *testing.T) { t.Skip("helper process for TestPass") }
func TestPair(t *testing.T) { t.Skip("no server binaries; AGENTONCE_REQUIRE_PG_STANDBY=1 makes this a failure") }
func TestSub(t *testing.T) {
	t.Run("x", func(t *testing.T) { t.Skip("AGENTONCE_PG_URL is not set") })
}
`)
	write("b/b_test.go", `package b

import "testing"

func TestFail(t *testing.T) { t.Log("the log of a failure"); t.Fatal("broken") }
func TestLong(t *testing.T) { t.Skip("AGENTONCE_LONG=1 runs the matrix") }
`)
	write("c/c.go", "package c\n")
	write("d/d_test.go", "package d\n\nfunc TestX(t *testing.T) { undefinedName() }\n")
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err == nil {
		t.Fatal("go test of a failing test succeeded")
	}
	var got bytes.Buffer
	r := newReport(&got)
	if err := r.read(bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	r.leftOut = []string{"adapters/x"}
	r.summary(func(name string) string {
		if name == "AGENTONCE_REDIS_URL" {
			return "set"
		}
		return ""
	})
	for _, want := range []string{
		"ok  \texample.com/m/a\t",
		"?   \texample.com/m/c\t[no test files]\n",
		"the log of a failure",
		"--- FAIL: TestFail",
		"FAIL\texample.com/m/b",
		"undefined: testing", // the compiler's message
		"FAIL\texample.com/m/d [build failed]",
		"skipped: AGENTONCE_LONG is not set: 2 tests in example.com/m/a, example.com/m/b; 1 run shortened in example.com/m/a; the modules adapters/x not built (their SDKs are most of a cold build). It turns on the long suites",
		"skipped: AGENTONCE_PG_URL is not set: 2 tests in example.com/m/a. It turns on",
		"skipped: AGENTONCE_REQUIRE_PG_STANDBY is not set: 1 tests in example.com/m/a. It turns on a failure instead of a skip",
	} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, got.String())
		}
	}
	if got, want := r.counts, map[string]int{"pass": 3, "fail": 1, "skip": 6}; !maps.Equal(got, want) {
		t.Errorf("counts = %v; want %v (top-level tests only)", got, want)
	}
	for _, bad := range []string{"AGENTONCE_REDIS_URL", "helper process", "TestPass", "=== RUN"} {
		if strings.Contains(got.String(), bad) {
			t.Errorf("report shows %q:\n%s", bad, got.String())
		}
	}
}
