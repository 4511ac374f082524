package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDeriveMatchesRecordedKey(t *testing.T) {
	fx := buildFixture(t)
	// The same intent phrased with other whitespace and member order.
	r := agentctl(t, false, "derive", "--journal", fx.path, "--tenant", "acme", "--session", "s1", "--turn", "1",
		"--tool", "charge", `{ "customer": 8812, "currency": "USD", "amount": "49.00" }`, "--json")
	if r.code != 0 {
		t.Fatalf("derive = %d, %s", r.code, r.stderr)
	}
	var d derivedJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.Key != fx.keys[fxCharge].String() || d.JournalState != "pending" || d.Namespace != "" ||
		string(d.Canonical) != `{"amount":"49.00","currency":"USD","customer":8812}` {
		t.Errorf("derive = %+v; want key %s, journal state pending, no namespace", d, fx.keys[fxCharge])
	}
	if strings.Contains(r.stdout, testNS.String()) {
		t.Errorf("derive printed the secret namespace without --show-namespace: %s", r.stdout)
	}
	r = agentctl(t, false, "derive", "--journal", fx.path, "--tenant", "acme", "--session", "s1", "--turn", "1",
		"--tool", "charge", `{}`, "--json", "--show-namespace")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Namespace != testNS.String() {
		t.Errorf("derive --show-namespace: namespace %q (%v); want %s", d.Namespace, err, testNS)
	}

	// Another turn is another intent: a different key, no record.
	r = agentctl(t, false, "derive", "--journal", fx.path, "--tenant", "acme", "--session", "s1", "--turn", "2",
		"--tool", "charge", `{"amount":"49.00","currency":"USD","customer":8812}`)
	if !strings.Contains(r.stdout, "journal\tno record for this key\n") || strings.Contains(r.stdout, fx.keys[fxCharge].String()) {
		t.Errorf("derive turn 2 = %q; want a new key without a record", r.stdout)
	}
}

func TestDeriveGolden(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, true, "derive", "--journal", fx.path, "--tenant", "acme", "--session", "s1", "--turn", "3",
		"--tool", "lookup", `{"id":7.0}`)
	if r.code != 0 {
		t.Fatalf("derive = %d, %s", r.code, r.stderr)
	}
	golden(t, "derive", r.stdout)

	r = agentctl(t, true, "derive", "--diff", "--journal", fx.path, fx.keys[fxCharge].String(), fx.keys[fxOld].String())
	if r.code != 0 {
		t.Fatalf("derive --diff = %d, %s", r.code, r.stderr)
	}
	golden(t, "derive-diff", r.stdout)
}

func TestDeriveDiffJSON(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "derive", "--journal", fx.path, "--tool", "charge", "--diff",
		`{"amount":"49.00","items":[1,2],"note":"a"}`, `{"items":[1,3,4],"amount":"49.00","x y":null}`, "--json")
	if r.code != 0 {
		t.Fatalf("derive --diff = %d, %s", r.code, r.stderr)
	}
	var d deriveDiffJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range d.Differences {
		got = append(got, x.Path+"="+rawOrAbsent(x.A)+"|"+rawOrAbsent(x.B))
	}
	want := []string{`$.items[1]=2|3`, `$.items[2]=(absent)|4`, `$.note="a"|(absent)`, `$["x y"]=(absent)|null`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("differences = %v; want %v", got, want)
	}
	if d.SameKey || d.FirstDifference != len(`{"amount":"49.00","items":[1,`) {
		t.Errorf("same_key %v, first_difference %d; want false, %d", d.SameKey, d.FirstDifference, len(`{"amount":"49.00","items":[1,`))
	}

	// Same intent, different spelling: same key, no differences.
	r = agentctl(t, false, "derive", "--journal", fx.path, "--tool", "t", "--diff", `{"a":1,"b":[true]}`, "{\"b\":[ true ],\n\"a\":1.0}", "--json")
	d = deriveDiffJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || !d.SameKey || len(d.Differences) != 0 || d.FirstDifference != -1 {
		t.Errorf("derive --diff of one intent spelled twice = %s (%v); want same key, no differences", r.stdout, err)
	}
}

func TestDeriveErrors(t *testing.T) {
	fx := buildFixture(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--tool", "t", `{"a":`}, exitUsage, "input"},
		{[]string{"--tool", "t"}, exitUsage, "want one INPUT"},
		{[]string{"--diff", `{}`}, exitUsage, "two INPUTs"},
		{[]string{"--namespace", "nope", `{}`}, exitUsage, "--namespace"},
		{[]string{"00000000-0000-5000-8000-000000000009"}, exitNotFound, "no record for key"},
		{[]string{"@/does/not/exist.json"}, exitUsage, "exist.json"},
	}
	for _, tt := range tests {
		r := agentctl(t, false, append([]string{"derive", "--journal", fx.path}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("derive %v = %d, %q; want %d and one line containing %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	// A record that keeps only the fingerprint cannot be re-derived.
	r := agentctl(t, false, "derive", "--journal", fx.path, fx.keys[fxFPOnly].String())
	if r.code != exitUsage || !strings.Contains(r.stderr, "keeps only the fingerprint") {
		t.Errorf("derive of a fingerprint-only record = %d, %q", r.code, r.stderr)
	}
}

func TestDeriveWithoutJournal(t *testing.T) {
	r := agentctl(t, false, "derive", "--namespace", testNS.String(), "--tenant", "acme", "--session", "s1", "--turn", "1",
		"--tool", "search", `{"q":"flights to Lisbon"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "journal\tno record for this key") && !strings.Contains(r.stdout, "key\t7c68d714-e153-543e-8ae1-aea97ba29ec2\n") {
		t.Errorf("derive --namespace = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestDeriveNormalizationAndStep(t *testing.T) {
	fx := buildFixture(t)
	schema := writeFile(t, `{"type":"object","properties":{"amount":{"type":"string"},"currency":{"type":"string","default":"USD"},"customer":{"type":"integer"},"reason":{"type":"string"}}}`)
	derive := func(args ...string) derivedJSON {
		t.Helper()
		r := agentctl(t, false, append([]string{"derive", "--journal", fx.path, "--tenant", "acme", "--session", "s1", "--turn", "1", "--tool", "charge", "--json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("derive %v = %d, %s", args, r.code, r.stderr)
		}
		var d derivedJSON
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The default currency is filled in and the volatile reason dropped:
	// the recorded charge's key.
	d := derive("--schema", schema, "--volatile", "reason", `{"amount":"49.00","customer":8812,"reason":"the user asked twice"}`)
	if d.Key != fx.keys[fxCharge].String() || string(d.Canonical) != `{"amount":"49.00","currency":"USD","customer":8812}` {
		t.Errorf("normalized derive = %s %s; want the charge's key %s", d.Key, d.Canonical, fx.keys[fxCharge])
	}
	// Without normalization the reason is part of the intent.
	if d2 := derive(`{"amount":"49.00","currency":"USD","customer":8812,"reason":"x"}`); d2.Key == d.Key {
		t.Errorf("a volatile field changed nothing without --volatile")
	}
	// A step key: the key depends on tenant and step only.
	s1 := derive("--step", "order-1/charge", `{"a":1}`)
	s2 := derive("--step", "order-1/charge", `{"a":2}`)
	if s1.Key != s2.Key || s1.Fingerprint == s2.Fingerprint || s1.Step != "order-1/charge" {
		t.Errorf("step keys: %s/%s fingerprints %s/%s; want one key, two fingerprints", s1.Key, s2.Key, s1.Fingerprint, s2.Fingerprint)
	}
	r := agentctl(t, false, "derive", "--journal", fx.path, "--schema", writeFile(t, `{"type":`), `{}`)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--schema") {
		t.Errorf("derive with a bad schema = %d, %q", r.code, r.stderr)
	}
}
