package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelp checks that -help says what agentcheck does, its flags and its
// exit codes on stdout, ends with the examples (not by sending the reader
// to -help), writes nothing to stderr, and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		var stdout, stderr bytes.Buffer
		if got := Run([]string{arg}, &stdout, &stderr); got != exitOK || stderr.Len() > 0 {
			t.Errorf("Run(%q) = %d, stderr %q; want %d and nothing on stderr", arg, got, stderr.String(), exitOK)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "  agentcheck -seed 1") {
			t.Errorf("Run(%q): the help ends with %q; want an example command", arg, last)
		}
		for _, want := range []string{"seeded fault checker", "-store S", "-scenarios LIST", "Exit codes:", "3  the check could not run"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("Run(%q) stdout lacks %q:\n%s", arg, want, stdout.String())
			}
		}
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
		say  string
	}{
		{[]string{"-store", "sqlite"}, exitUsage, `-store "sqlite"`},
		{[]string{"-duration", "0s"}, exitUsage, "-duration must be positive"},
		{[]string{"-lease", "10ms"}, exitUsage, "-lease must be at least 100ms"},
		{[]string{"-scenarios", "hangup,nosuch"}, exitUsage, `unknown scenario "nosuch"`},
		{[]string{"-nosuchflag"}, exitUsage, "unknown flag -nosuchflag; run 'agentcheck -help'"},
		{[]string{"-sed", "1"}, exitUsage, "unknown flag -sed; did you mean -seed? (run 'agentcheck -help' for the flags and exit codes)"},
		{[]string{"--stroe=bolt"}, exitUsage, "did you mean -store?"},
		{[]string{"-server-stor", "bolt"}, exitUsage, "did you mean -server-store?"},
		{[]string{"-seed", "x"}, exitUsage, `invalid value "x" for flag -seed`},
		{[]string{"extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"-store", "postgres", "-pg", ""}, exitUsage, "needs -pg URL"},
		{[]string{"-store", "both", "-pg", ""}, exitUsage, "needs -pg URL"},
		{[]string{"worker"}, exitUsage, "-plan, -journal, -history and -proc are required"},
		{[]string{"-downstream", "proxy"}, exitUsage, `-downstream "proxy"`},
		{[]string{"-kill-server"}, exitUsage, "-kill-server needs -downstream middleware"},
		{[]string{"-failover", "promote.sh"}, exitUsage, "-failover needs -store postgres"},
		{[]string{"server", "-plan", "p"}, exitUsage, "-plan, -journal, -log, -errlog and -addr are required"},
		{[]string{"-downstream", "middleware", "-server-store", "sqlite"}, exitUsage, `-server-store "sqlite"`},
		{[]string{"-downstream", "middleware", "-server-store", "postgres", "-pg", ""}, exitUsage, "-server-store postgres needs -pg URL"},
		{[]string{"-downstream", "middleware", "-server-store", "redis", "-redis", "redis://127.0.0.1:1/0"}, exitUsage, "no Redis journal linked in"},
		{[]string{"-store", "redis", "-redis", "redis://127.0.0.1:1/0"}, exitUsage, "-store redis: this agentcheck has no Redis journal linked in"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := Run(tt.args, &stdout, &stderr); got != tt.want || !strings.Contains(stderr.String(), tt.say) {
			t.Errorf("Run(%q) = %d, stderr %q; want %d and %q", tt.args, got, stderr.String(), tt.want, tt.say)
		}
	}
}
