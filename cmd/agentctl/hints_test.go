package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// A postgres:// journal whose server cannot be reached is one line naming
// host and port, exit 9, not the driver's dial error.
func TestPostgresUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, args := range [][]string{
		{"ls", "--journal", "postgres://postgres:hunter2@" + addr + "/postgres?sslmode=disable"},
		{"resolve", "0123abcd", "--failed", "--reason", "r", "--journal", "postgres://postgres@" + addr + "/postgres?sslmode=disable"},
	} {
		r := agentctl(t, false, args...)
		want := "cannot reach PostgreSQL at " + addr + ": connect: connection refused"
		if r.code != exitUnreachable || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "dial error") ||
			strings.Contains(r.stderr, "hunter2") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("agentctl %q = %d, %q; want %d and one line containing %q, without the password or pgx's dial error", args, r.code, r.stderr, exitUnreachable, want)
		}
	}
}

// An export says on standard error that it carries the tools' inputs and
// outputs, to a file or to standard output; the export itself is unchanged.
func TestExportWarns(t *testing.T) {
	fx := buildFixture(t)
	out := filepath.Join(t.TempDir(), "backup.jsonl")
	for _, args := range [][]string{
		{"export", "--journal", fx.path},
		{"export", "--journal", fx.path, "--output", out},
	} {
		r := agentctl(t, false, args...)
		if r.code != exitOK || !strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stderr, "holds the tools' inputs and outputs") {
			t.Errorf("agentctl %q = %d, stderr %q; want 0 and the warning", args, r.code, r.stderr)
		}
		if len(args) == 3 && !strings.HasPrefix(r.stdout, `{"agentonce_export"`) {
			t.Errorf("agentctl %q stdout starts %.40q; want the export's header", args, r.stdout)
		}
	}
}
