package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// hostile holds what an MCP client or a model may put in a tool, tenant,
// session or turn name: a terminal escape sequence (ESC [), a C1 CSI, a
// right-to-left override, a line separator and a backspace.
const (
	hostileTool    = "charge\x1b[2J\x1b]0;pwned\x07"
	hostileSession = "s\u202egnp.exe"
	hostileTenant  = "acme\u009b31m"
	hostileTurn    = "1\u2028\b"
)

// rawHostile lists the characters none of agentctl's human output may
// carry as they are.
var rawHostile = []string{"\x1b", "\x07", "\u009b", "\u202e", "\u2028", "\b"}

func hostileJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	clock := t0
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return clock }}})
	if err != nil {
		t.Fatal(err)
	}
	intent := keyderive.Intent{Tenant: hostileTenant, Session: hostileSession, Turn: hostileTurn, Tool: hostileTool}
	d, err := (&keyderive.Deriver{Namespace: testNS}).Derive(intent, []byte(`{"note":"\u202e\u001b[31m"}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Begin(context.Background(), journal.BeginRequest{Key: d.Key, Intent: intent, Fingerprint: d.Fingerprint,
		Effect: journal.Unkeyed, Input: d.Canonical, Owner: "agent\x1b[1m", AttemptID: "att\u202e1", LeaseTTL: time.Second, Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Second)
	if _, err := s.Complete(context.Background(), journal.Completion{Key: d.Key, Token: res.Token, State: journal.StateUnknown,
		ErrorClass: "maybe-executed", ErrorMessage: "reset by \x1b[31mpeer\u202e"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every human-readable output escapes control and bidirectional
// characters from the journal: ls, show, replay, stats, timeline (text
// and page), derive, tail's lines and error lines, on a terminal and not.
func TestHostileNamesEscaped(t *testing.T) {
	path := hostileJournal(t)
	page := filepath.Join(t.TempDir(), "t.html")
	runs := [][]string{
		{"ls", "--journal", path},
		{"show", "--journal", path, keyOf(t, path)},
		{"replay", "--journal", path, "--session", hostileSession},
		{"stats", "--journal", path},
		{"timeline", "--journal", path, "--session", hostileSession},
		{"timeline", "--journal", path, "--session", hostileSession, "--html", page},
		{"derive", "--namespace", testNS.String(), "--tool", hostileTool, "--session", hostileSession, "--turn", hostileTurn, `{"a":"` + "\u202e" + `"}`},
		{"replay", "--journal", path, "--session", hostileSession + "x"},
		{"show", "--journal", path, "\x1b[31m"},
	}
	for _, tty := range []bool{true, false} {
		for _, args := range runs {
			r := agentctl(t, tty, args...)
			for _, raw := range rawHostile {
				if strings.Contains(r.stdout, raw) || strings.Contains(r.stderr, raw) {
					t.Errorf("agentctl %q (terminal %v) prints %q as it is:\nstdout %q\nstderr %q", args, tty, raw, r.stdout, r.stderr)
				}
			}
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range rawHostile {
		if strings.Contains(string(b), raw) {
			t.Errorf("timeline --html page holds %q as it is", raw)
		}
	}
	e, _, _ := testEnv(true)
	for _, tty := range []bool{true, false} {
		e.stdoutTTY = tty
		line := tailLine(e, &inspect.Event{Time: t0, Kind: "result", Tool: hostileTool, Session: hostileSession, Turn: hostileTurn,
			Status: "unknown", Error: "x\u202ey"})
		for _, raw := range rawHostile {
			if strings.Contains(line, raw) {
				t.Errorf("tail line (terminal %v) %q holds %q as it is", tty, line, raw)
			}
		}
	}
}

func keyOf(t *testing.T, path string) string {
	t.Helper()
	r := agentctl(t, false, "ls", "--journal", path)
	f := strings.Split(strings.TrimSpace(r.stdout), "\t")
	if r.code != 0 || len(f) < 2 {
		t.Fatalf("ls = %d, %q", r.code, r.stdout)
	}
	return f[1]
}

func TestEscapeText(t *testing.T) {
	for _, tt := range []struct{ in, text, field string }{
		{"plain café", "plain café", "plain café"},
		{"a\x1b[31mb", `a\x1b[31mb`, `a\x1b[31mb`},
		{"r\u202el", `r\u202el`, `r\u202el`},
		{"c1\u0085", `c1\x85`, `c1\x85`},
		{"tab\tnl\n", "tab\tnl\n", `tab\tnl\n`},
		{`back\slash`, `back\slash`, `back\\slash`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"keep \uFFFD", "keep \uFFFD", "keep \uFFFD"},
		{"del\x7f", `del\x7f`, `del\x7f`},
	} {
		if got := escapeText(tt.in); got != tt.text {
			t.Errorf("escapeText(%q) = %q; want %q", tt.in, got, tt.text)
		}
		if got := escapeField(tt.in); got != tt.field {
			t.Errorf("escapeField(%q) = %q; want %q", tt.in, got, tt.field)
		}
	}
}
