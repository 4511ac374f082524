package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// prefixJournal holds two records whose keys share their first eight hex
// digits (abcd1234) and differ in the ninth, and a third elsewhere.
func prefixJournal(t *testing.T) (string, []uuid.UUID) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return t0 }}})
	if err != nil {
		t.Fatal(err)
	}
	keys := []uuid.UUID{
		uuid.MustParse("abcd1234-0000-5000-8000-000000000001"),
		uuid.MustParse("abcd1234-1111-5000-8000-000000000002"),
		uuid.MustParse("0123abcd-2222-5000-8000-000000000003"),
	}
	for i, k := range keys {
		in := keyderive.Intent{Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge", Discriminator: k.String()}
		if _, err := s.Begin(context.Background(), journal.BeginRequest{Key: k, Intent: in, Effect: journal.Keyed,
			Owner: "agent-1", AttemptID: "att-" + string(rune('a'+i)), LeaseTTL: time.Second, Durable: true}); err != nil {
			t.Fatalf("Begin(%s): %v", k, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, keys
}

// show and resolve take any unique prefix of a key, as the timeline prints
// it; an ambiguous one lists the keys it starts (exit 2), and one that
// starts none is exit 6.
func TestKeyPrefix(t *testing.T) {
	path, keys := prefixJournal(t)
	for _, tt := range []struct {
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{[]string{"show", "abcd1234-0", "--journal", path}, exitOK, keys[0].String(), ""},
		{[]string{"show", "ABCD12341", "--journal", path}, exitOK, keys[1].String(), ""},
		{[]string{"show", "0123", "--journal", path}, exitOK, keys[2].String(), ""},
		{[]string{"show", "abcd1234", "--journal", path}, exitUsage, "", "key prefix abcd1234 is ambiguous: it starts " + keys[0].String() + ", " + keys[1].String()},
		{[]string{"show", "ffff", "--journal", path}, exitNotFound, "", "no key in this journal starts with ffff"},
		{[]string{"show", "abc", "--journal", path}, exitUsage, "", "first 4 or more hex digits"},
		{[]string{"resolve", "abcd1234", "--failed", "--reason", "r", "--journal", path}, exitUsage, "", "is ambiguous"},
		{[]string{"resolve", "0123abcd", "--failed", "--reason", "not sent", "--journal", path}, exitOK, "resolved " + keys[2].String() + " as failed", ""},
	} {
		r := agentctl(t, false, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout, tt.out) || !strings.Contains(r.stderr, tt.err) {
			t.Errorf("agentctl %q = %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, r.code, r.stdout, r.stderr, tt.code, tt.out, tt.err)
		}
	}
}

// A misspelt command or flag gets the closest one, as a usage error.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"lst"}, `unknown command "lst"; did you mean ls?`},
		{[]string{"shwo", "K"}, `did you mean show?`},
		{[]string{"replya"}, `did you mean replay?`},
		{[]string{"ls", "--sesion", "s1"}, `unknown flag: --sesion; did you mean --session?`},
		{[]string{"timeline", "--sesion=s1"}, `did you mean --session?`},
		{[]string{"ls", "--jsn"}, `did you mean --json?`},
		{[]string{"gc", "--dry"}, `did you mean --dry-run?`},
		{[]string{"ls", "--zzzzzz"}, `unknown flag: --zzzzzz; run 'agentctl help ls'`},
		{[]string{"nonsense"}, `unknown command "nonsense"; run 'agentctl help'`},
	} {
		r := agentctl(t, false, tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.err) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("agentctl %q = %d, stderr %q; want %d and one line containing %q", tt.args, r.code, r.stderr, exitUsage, tt.err)
		}
	}
}

// The completion scripts are generated for each shell, and the completion
// they call (cobra's __complete) offers commands, flags, the journal's
// sessions and tools, states and keys.
func TestCompletion(t *testing.T) {
	fx := buildFixture(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := agentctl(t, false, "completion", sh)
		if r.code != exitOK || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s = %d, %d bytes, stderr %q; want a script calling __complete", sh, r.code, len(r.stdout), r.stderr)
		}
	}
	if r := agentctl(t, false, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh = %d; want %d", r.code, exitUsage)
	}
	charge := fx.keys[fxCharge].String()
	for _, tt := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"__complete", "re"}, []string{"replay", "resolve"}, []string{"ls"}},
		{[]string{"__complete", "ls", "--s"}, []string{"--session", "--since", "--state"}, []string{"--tool"}},
		{[]string{"__complete", "ls", "--journal", fx.path, "--session", ""}, []string{"s1", "s2", "s3"}, nil},
		{[]string{"__complete", "ls", "--journal", fx.path, "--tool", "ch"}, []string{"charge"}, []string{"search"}},
		{[]string{"__complete", "ls", "--state", "su"}, []string{"succeeded", "suppressed"}, []string{"pending"}},
		{[]string{"__complete", "show", "--journal", fx.path, charge[:6]}, []string{charge + "\tcharge s1 pending"}, []string{fx.keys[fxBook].String()}},
		{[]string{"__complete", "--journal", fx.path, "resolve", ""}, []string{charge, fx.keys[fxBook].String()}, nil},
	} {
		r := agentctl(t, false, tt.args...)
		if r.code != exitOK {
			t.Errorf("agentctl %q = %d, stderr %q", tt.args, r.code, r.stderr)
			continue
		}
		lines := strings.Split(r.stdout, "\n")
		has := func(w string) bool {
			for _, l := range lines {
				if l == w || strings.HasPrefix(l, w+"\t") {
					return true
				}
			}
			return false
		}
		for _, w := range tt.want {
			if !has(w) {
				t.Errorf("agentctl %q offers %q; want %q among them", tt.args, lines, w)
			}
		}
		for _, w := range tt.not {
			if has(w) {
				t.Errorf("agentctl %q offers %q; want no %q", tt.args, lines, w)
			}
		}
	}
}

// Terminal times show milliseconds: attempts a few milliseconds apart do
// not read alike.
func TestHumanTimeMilliseconds(t *testing.T) {
	e, _, _ := testEnv(true)
	a, b := t0.Add(4*time.Millisecond), t0.Add(9*time.Millisecond)
	if got, want := e.humanTime(a), "2026-03-01 10:00:00.004"; got != want {
		t.Errorf("humanTime(%v) = %q; want %q", a, got, want)
	}
	if e.humanTime(a) == e.humanTime(b) {
		t.Errorf("humanTime(%v) = humanTime(%v) = %q; want them told apart", a, b, e.humanTime(a))
	}
}
