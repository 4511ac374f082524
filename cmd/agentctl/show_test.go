package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestShowGolden(t *testing.T) {
	fx := buildFixture(t)
	for _, name := range []string{fxLookup, fxResolved, fxCharge} {
		r := agentctl(t, true, "show", fx.keys[name].String(), "--journal", fx.path)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("show %s = %d, stderr %q", name, r.code, r.stderr)
		}
		golden(t, "show-"+name, r.stdout)
	}
	r := agentctl(t, false, "show", fx.keys[fxShip].String(), "--journal", fx.path)
	if !strings.Contains(r.stdout, "lease_expires\t2026-03-02T09:07:00Z (the owner stopped: no process has the journal open;") {
		t.Errorf("show of a dead owner's live lease = %q", r.stdout)
	}
}

func TestShowTSVAndJSON(t *testing.T) {
	fx := buildFixture(t)
	key := fx.keys[fxLookup].String()
	r := agentctl(t, false, "show", "--journal", fx.path, key)
	if r.code != 0 {
		t.Fatalf("show = %d, %s", r.code, r.stderr)
	}
	fields := map[string]string{}
	var attempts [][]string
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if f[0] == "attempt" {
			attempts = append(attempts, f)
			continue
		}
		if len(f) != 2 {
			t.Fatalf("line %q has %d fields; want 2", l, len(f))
		}
		fields[f[0]] = f[1]
	}
	if fields["state"] != "failed" || fields["effect"] != "idempotent" || fields["error_class"] != "not-executed" || fields["input"] != `{"id":7}` {
		t.Errorf("show fields = %v", fields)
	}
	if len(attempts) != 2 || attempts[1][1] != "2" || attempts[1][5] != "not-executed" {
		t.Errorf("show attempts = %q; want two, the second not-executed", attempts)
	}

	r = agentctl(t, false, "show", key, "--journal", fx.path, "--json")
	var j recordJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || r.code != 0 {
		t.Fatalf("show --json = %d, %v: %s", r.code, err, r.stdout)
	}
	if j.Key != key || j.State != "failed" || len(j.Attempts) != 2 || j.Attempts[0].Class != "not-executed" || j.Attempts[1].End == nil {
		t.Errorf("show --json = %+v", j)
	}
}

func TestShowErrors(t *testing.T) {
	fx := buildFixture(t)
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"show", "--journal", fx.path, "00000000-0000-5000-8000-000000000001"}, exitNotFound, "no record for key 00000000-0000-5000-8000-000000000001"},
		{[]string{"show", "--journal", fx.path, "not-a-key"}, exitUsage, `key "not-a-key" is neither a key`},
		{[]string{"show", "--journal", fx.path}, exitUsage, "want exactly one KEY"},
		{[]string{"show", "--journal", fx.path + ".typo", fx.keys[fxBook].String()}, exitNoJournal, "not found"},
	}
	for _, tt := range tests {
		r := agentctl(t, false, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v = %d, stderr %q; want %d and one line containing %q", tt.args[1:], r.code, r.stderr, tt.code, tt.want)
		}
	}
}
