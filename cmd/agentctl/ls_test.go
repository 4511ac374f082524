package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLsTableGolden(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, true, "ls", "--journal", fx.path)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("ls = %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	golden(t, "ls", r.stdout)
}

func TestLsTSV(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "ls", "--journal", fx.path, "--session", "s1")
	if r.code != 0 {
		t.Fatalf("ls = %d, %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("ls --session s1 printed %d lines; want 8:\n%s", len(lines), r.stdout)
	}
	// Newest first: ship was the last intent of s1.
	f := strings.Split(lines[0], "\t")
	want := []string{t0.Add(7 * time.Minute).Format(time.RFC3339Nano), fx.keys[fxShip].String(), "acme", "s1", "4", "ship", "pending", "1"}
	if strings.Join(f, "|") != strings.Join(want, "|") {
		t.Errorf("first line = %q; want %q", f, want)
	}
}

func TestLsFilters(t *testing.T) {
	fx := buildFixture(t)
	tests := []struct {
		args []string
		want []string // fixture names, newest first
	}{
		{[]string{"--session", "s1", "--turn", "3"}, []string{fxBook, fxLookup}},
		{[]string{"--tool", "charge"}, []string{fxResolved, fxOld, fxCharge}},
		{[]string{"--state", "pending"}, []string{fxRetaken, fxShip, fxRefund, fxCharge}},
		{[]string{"--tenant", "beta"}, []string{fxBeta}},
		{[]string{"--since", t0.Add(9 * time.Minute).Format(time.RFC3339), "--until", t0.Add(11 * time.Minute).Format(time.RFC3339)}, []string{fxResolved, fxBeta}},
		{[]string{"--limit", "2"}, []string{fxRetaken, fxFPOnly}},
		{[]string{"--state", "unknown"}, []string{fxEmail}},
		{[]string{"--session", "nope"}, nil},
	}
	names := map[string]string{}
	for n, k := range fx.keys {
		names[k.String()] = n
	}
	for _, tt := range tests {
		args := append([]string{"ls", "--journal", fx.path}, tt.args...)
		r := agentctl(t, false, args...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if l != "" {
				got = append(got, names[strings.Split(l, "\t")[1]])
			}
		}
		if r.code != 0 || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("ls %v = %d %v (stderr %q); want 0 %v", tt.args, r.code, got, r.stderr, tt.want)
		}
	}
}

func TestLsJSON(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "ls", "--journal", fx.path, "--json")
	if r.code != 0 {
		t.Fatalf("ls --json = %d, %s", r.code, r.stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	n := 0
	byKey := map[string]recordJSON{}
	for sc.Scan() {
		var j recordJSON
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("line %d: %v: %s", n+1, err, sc.Text())
		}
		byKey[j.Key] = j
		n++
	}
	if n != fixtureSize {
		t.Fatalf("ls --json printed %d records; want %d", n, fixtureSize)
	}
	ch := byKey[fx.keys[fxCharge].String()]
	if ch.State != "pending" || ch.Effect != "unkeyed" || string(ch.Input) != `{"amount":"49.00","currency":"USD","customer":8812}` ||
		ch.Lease.Owner != "agent-1" || ch.Lease.Expires == nil || !ch.Lease.Expires.Equal(t0.Add(time.Minute+30*time.Second)) ||
		len(ch.Attempts) != 1 || ch.Attempts[0].End != nil || !isNull(ch.Output) {
		t.Errorf("charge record = %+v", ch)
	}
	s := byKey[fx.keys[fxSearch].String()]
	if s.State != "succeeded" || string(s.Output) != `{"hits":3}` || s.Created.Location() != time.UTC || len(s.Fingerprint) != 64 {
		t.Errorf("search record = %+v", s)
	}
	fp := byKey[fx.keys[fxFPOnly].String()]
	if !isNull(fp.Input) || !isNull(fp.Output) || fp.OutputBase64 == nil || *fp.OutputBase64 != "bm90IGpzb24gPCY+" {
		t.Errorf("fingerprint-only record: input %s, output %s, output_base64 %v; want null, null, base64 of the text", fp.Input, fp.Output, fp.OutputBase64)
	}
	res := byKey[fx.keys[fxResolved].String()]
	if res.Resolution == nil || res.Resolution.By != "bob@ops" || res.Resolution.State != "succeeded" || string(res.Resolution.Output) != `{"id":"ch_7"}` {
		t.Errorf("resolved record resolution = %+v", res.Resolution)
	}
}

func TestLsBadFlags(t *testing.T) {
	fx := buildFixture(t)
	for _, args := range [][]string{
		{"--state", "done"},
		{"--turn", "1"},
		{"--since", "yesterday"},
		{"--limit", "-1"},
		{"--nope"},
		{"extra"},
	} {
		r := agentctl(t, false, append([]string{"ls", "--journal", fx.path}, args...)...)
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("ls %v = %d, stdout %q, stderr %q; want %d and one line on stderr", args, r.code, r.stdout, r.stderr, exitUsage)
		}
	}
}

// isNull reports whether a decoded embedded JSON field was null or absent.
func isNull(r json.RawMessage) bool { return r == nil || string(r) == "null" }
