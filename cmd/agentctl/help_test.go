package main

import (
	"context"
	"github.com/spf13/pflag"
	"os"
	"strings"
	"testing"
)

// TestReadmeExitCodes keeps README.md's table equal to the one agentctl
// prints.
func TestReadmeExitCodes(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(b), "| code | meaning |")
	end := strings.Index(string(b), "<!-- end of exit codes -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no exit-code table")
	}
	if got := string(b[start:end]); got != exitCodeTable() {
		t.Errorf("README.md exit codes:\n%s\nagentctl help exit-codes:\n%s", got, exitCodeTable())
	}
	r := agentctl(t, false, "help", "exit-codes")
	if r.code != 0 || r.stdout != exitCodeTable() {
		t.Errorf("help exit-codes = %d, %q", r.code, r.stdout)
	}
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		r := agentctl(t, false, "help", c.name)
		if r.code != 0 || !strings.Contains(r.stdout, "agentctl "+c.name) || (c.name != "completion" && !strings.Contains(r.stdout, "--journal PATH")) {
			t.Errorf("help %s = %d, %q", c.name, r.code, r.stdout)
		}
		r2 := agentctl(t, false, c.name, "--help")
		if r2.code != 0 || r2.stdout != r.stdout {
			t.Errorf("%s --help = %d, differs from help %s", c.name, r2.code, c.name)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "json"}} {
		if r := agentctl(t, false, args...); r.code != 0 || r.stdout == "" {
			t.Errorf("%v = %d, %q", args, r.code, r.stdout)
		}
	}
	if r := agentctl(t, false, "help", "nope"); r.code != exitUsage {
		t.Errorf("help nope = %d; want %d", r.code, exitUsage)
	}
	if r := agentctl(t, false); r.code != exitUsage || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("no arguments = %d, %q", r.code, r.stderr)
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	tests := []struct {
		args    []string
		pos     string
		session string
		json    bool
	}{
		{[]string{"a", "--session", "s", "b"}, "a,b", "s", false},
		{[]string{"--json", "a"}, "a", "", true},
		{[]string{"a", "--json", "--", "--session", "x"}, "a,--session,x", "", true},
		{[]string{"-", "--json"}, "-", "", true},
		{nil, "", "", false},
	}
	for _, tt := range tests {
		var session string
		var js bool
		var pos []string
		e, _, _ := testEnv(false)
		err := parseWith(e, func(_ *env, fs *pflag.FlagSet) func(context.Context, []string) error {
			fs.StringVar(&session, "session", "", "")
			fs.BoolVar(&js, "json", false, "")
			return func(_ context.Context, args []string) error {
				pos = args
				return nil
			}
		}, tt.args...)
		if err != nil || strings.Join(pos, ",") != tt.pos || session != tt.session || js != tt.json {
			t.Errorf("parse(%q) = %q session %q json %v, %v; want %q %q %v", tt.args, pos, session, js, err, tt.pos, tt.session, tt.json)
		}
	}
}
