package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelp checks that -help says what agentcheck does, its flags and its
// exit codes on stdout, and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		var stdout, stderr bytes.Buffer
		if got := Run([]string{arg}, &stdout, &stderr); got != exitOK {
			t.Errorf("Run(%q) = %d, stderr %q; want %d", arg, got, stderr.String(), exitOK)
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
		{[]string{"-nosuchflag"}, exitUsage, "nosuchflag"},
		{[]string{"extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"-store", "postgres", "-pg", ""}, exitUsage, "needs -pg URL"},
		{[]string{"-store", "both", "-pg", ""}, exitUsage, "needs -pg URL"},
		{[]string{"worker"}, exitUsage, "-plan, -journal, -history and -proc are required"},
		{[]string{"-downstream", "proxy"}, exitUsage, `-downstream "proxy"`},
		{[]string{"-kill-server"}, exitUsage, "-kill-server needs -downstream middleware"},
		{[]string{"server", "-plan", "p"}, exitUsage, "-plan, -journal, -log, -errlog and -addr are required"},
		{[]string{"-downstream", "middleware", "-server-store", "sqlite"}, exitUsage, `-server-store "sqlite"`},
		{[]string{"-downstream", "middleware", "-server-store", "postgres", "-pg", ""}, exitUsage, "-server-store postgres needs -pg URL"},
		{[]string{"-downstream", "middleware", "-server-store", "redis", "-redis", "redis://127.0.0.1:1/0"}, exitUsage, "no Redis journal linked in"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := Run(tt.args, &stdout, &stderr); got != tt.want || !strings.Contains(stderr.String(), tt.say) {
			t.Errorf("Run(%q) = %d, stderr %q; want %d and %q", tt.args, got, stderr.String(), tt.want, tt.say)
		}
	}
}
