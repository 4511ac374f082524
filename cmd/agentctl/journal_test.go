package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal/bolt"
)

// TestInspectionLeavesFileUnchanged runs every inspection command, in
// every output mode, and checks the journal's bytes and mtime afterwards.
func TestInspectionLeavesFileUnchanged(t *testing.T) {
	fx := buildFixture(t)
	before := fileHash(t, fx.path)
	fi0, _ := os.Stat(fx.path)
	key := fx.keys[fxEmail].String()
	cmds := [][]string{
		{"ls"}, {"ls", "--json"}, {"ls", "--session", "s1", "--state", "pending"},
		{"show", key}, {"show", key, "--json"},
		{"stats"}, {"stats", "--json"},
		{"derive", "--tool", "x", `{"a":1}`}, {"derive", key}, {"derive", "--diff", key, fx.keys[fxCharge].String()},
		{"replay", "--session", "s1"}, {"replay", "--session", "s2", "--json"},
		{"export"}, {"export", "--output", filepath.Join(t.TempDir(), "x.jsonl")},
		{"gc", "--dry-run"}, {"gc", "--dry-run", "--json"},
	}
	for _, tty := range []bool{false, true} {
		for _, c := range cmds {
			r := agentctl(t, tty, append(c, "--journal", fx.path)...)
			if r.code != exitOK && r.code != exitReplayBlock && r.code != exitReplayRun {
				t.Errorf("%v = %d, %s", c, r.code, r.stderr)
			}
			if fileHash(t, fx.path) != before {
				t.Fatalf("%v (tty %v) changed the journal file", c, tty)
			}
		}
	}
	fi1, _ := os.Stat(fx.path)
	if !fi1.ModTime().Equal(fi0.ModTime()) || fi1.Size() != fi0.Size() {
		t.Errorf("journal mtime/size changed: %v %d -> %v %d", fi0.ModTime(), fi0.Size(), fi1.ModTime(), fi1.Size())
	}
	// gc --dry-run counted the expired record; it is still there.
	r := agentctl(t, false, "gc", "--dry-run", "--journal", fx.path)
	if r.stdout != "would_remove\t1\nkept_unknown\t0\n" {
		t.Errorf("gc --dry-run = %q; want would_remove 1", r.stdout)
	}
}

func TestBadJournals(t *testing.T) {
	fx := buildFixture(t)
	good, err := os.ReadFile(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// A journal held open by a writer: bbolt's flock blocks a second open,
	// even in the same process.
	locked := filepath.Join(dir, "locked.db")
	s, err := bolt.Open(locked, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Each command gets its own copy of a damaged file: a failed open must
	// not depend on what an earlier one left behind.
	n := 0
	file := func(content []byte) func() string {
		return func() string {
			n++
			p := filepath.Join(dir, fmt.Sprintf("bad-%d.db", n))
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	fixed := func(p string) func() string { return func() string { return p } }
	tests := []struct {
		name string
		path func() string
		code int
		want string
	}{
		{"missing", fixed(filepath.Join(dir, "typo.db")), exitNoJournal, "not found"},
		{"garbage", file([]byte(strings.Repeat("not a journal\n", 2000))), exitCorrupt, "corrupt"},
		{"truncated", file(good[:len(good)/3]), exitCorrupt, "corrupt"},
		{"empty", file(nil), exitCorrupt, "empty"},
		{"locked", fixed(locked), exitInUse, "in use"},
		{"directory", fixed(dir), exitUsage, "is a directory"},
	}
	cmds := [][]string{{"ls"}, {"show", fx.keys[fxBook].String()}, {"stats"}, {"replay", "--session", "s1"},
		{"derive", `{}`}, {"export"}, {"gc", "--dry-run"}, {"gc"}, {"resolve", fx.keys[fxEmail].String(), "--failed", "--reason", "x"},
		{"import", "--create", writeFile(t, exportOf(t, fx.path))}}
	for _, tt := range tests {
		for _, c := range cmds {
			if tt.name == "missing" && c[0] == "import" {
				continue // import --create creates it: TestImportCreate
			}
			path := tt.path()
			var hash [32]byte
			if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
				hash = fileHash(t, path)
			}
			r := agentctl(t, false, append(c, "--journal", path, "--lock-timeout", "50ms")...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Errorf("%v on %s = %d, stdout %q, stderr %q; want %d and one line containing %q",
					c, tt.name, r.code, r.stdout, r.stderr, tt.code, tt.want)
			}
			if hash != [32]byte{} && fileHash(t, path) != hash {
				t.Errorf("%v modified the %s file", c, tt.name)
			}
			if tt.name == "missing" && c[0] != "import" {
				if _, err := os.Stat(path); err == nil {
					t.Errorf("%v created %s", c, path)
				}
			}
		}
	}
}

func TestNoJournalGiven(t *testing.T) {
	r := agentctl(t, false, "ls")
	if r.code != exitUsage || !strings.Contains(r.stderr, "AGENTONCE_JOURNAL") {
		t.Errorf("ls without a journal = %d, %q", r.code, r.stderr)
	}
	// The environment variable names the journal when the flag is absent.
	fx := buildFixture(t)
	e, out, _ := testEnv(false)
	e.getenv = func(k string) string {
		if k == "AGENTONCE_JOURNAL" {
			return fx.path
		}
		return ""
	}
	if code := run(t.Context(), e, []string{"ls", "--limit", "1"}); code != 0 || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("ls with $AGENTONCE_JOURNAL = %d, %q", code, out.String())
	}
}

// buildFlags are go build's flags for the binary a test builds.
var buildFlags []string

// TestBinary builds agentctl and runs it as a subprocess: the real main,
// exit codes, stdout not a terminal (tab-separated output).
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	fx := buildFixture(t)
	bin := filepath.Join(t.TempDir(), "agentctl")
	if out, err := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tests := []struct {
		args []string
		env  []string
		code int
		out  string // substring of stdout
		err  string // substring of stderr
	}{
		{[]string{"help"}, nil, 0, "agentctl help exit-codes", ""},
		{[]string{"help", "exit-codes"}, nil, 0, "| 11 |", ""},
		{[]string{"ls", "-h"}, nil, 0, "--session SESSION", ""},
		{[]string{"ls", "--session", "s3"}, []string{"AGENTONCE_JOURNAL=" + fx.path}, 0, fx.keys[fxBeta].String() + "\tbeta\ts3", ""},
		{[]string{"show", fx.keys[fxBook].String(), "--journal", fx.path}, nil, 0, "state\tfailed", ""},
		{[]string{"replay", "--journal", fx.path, "--session", "s1", "--at", testNow.Format(time.RFC3339)}, nil, exitReplayBlock, "block\t", ""},
		{[]string{"replay", "--journal", fx.path, "--session", "s3", "--at", testNow.Format(time.RFC3339)}, nil, exitOK, "answer\t", ""},
		{[]string{"replay", "--journal", fx.path, "--session", "s3"}, nil, exitReplayRun, "anew\t", ""},
		{[]string{"show", "--journal", fx.path + "x", fx.keys[fxBook].String()}, nil, exitNoJournal, "", "not found"},
		{[]string{"frobnicate"}, nil, exitUsage, "", "unknown command"},
		{nil, nil, exitUsage, "", "Usage:"},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = append(os.Environ(), "AGENTONCE_JOURNAL=")
		cmd.Env = append(cmd.Env, tt.env...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("agentctl %v = %d\nstdout %q\nstderr %q\nwant %d, stdout containing %q, stderr containing %q",
				tt.args, code, out.String(), errb.String(), tt.code, tt.out, tt.err)
		}
	}
}
