package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

func getRecord(t *testing.T, path string, key string) journal.Record {
	t.Helper()
	r := agentctl(t, false, "show", key, "--journal", path, "--json")
	if r.code != 0 {
		t.Fatalf("show %s = %d, %s", key, r.code, r.stderr)
	}
	var rec journal.Record
	if err := jsonUnmarshal(r.stdout, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestResolve(t *testing.T) {
	fx := buildFixture(t)
	email := fx.keys[fxEmail].String()

	r := agentctl(t, false, "resolve", email, "--journal", fx.path, "--succeeded", "--output", `{"sent":true}`)
	if r.code != 0 || !strings.Contains(r.stdout, "resolved "+email+" as succeeded by alice@host1") {
		t.Fatalf("resolve = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	rec := getRecord(t, fx.path, email)
	if rec.State != journal.StateSucceeded || string(rec.Output) != `{"sent":true}` || rec.Resolution == nil ||
		rec.Resolution.By != "alice@host1" || !rec.Resolution.At.Equal(testNow) {
		t.Errorf("resolved record = %+v, resolution %+v", rec, rec.Resolution)
	}
	// Settled now: the replay answers it, and a second resolve is refused.
	r = agentctl(t, false, "resolve", email, "--journal", fx.path, "--failed", "--reason", "again")
	if r.code != exitConflict || !strings.Contains(r.stderr, "already settled as succeeded") {
		t.Errorf("second resolve = %d, %q; want %d", r.code, r.stderr, exitConflict)
	}

	// A pending intent whose owner died: --failed with a reason and --by.
	charge := fx.keys[fxCharge].String()
	r = agentctl(t, false, "resolve", "--journal", fx.path, charge, "--failed", "--reason", "no charge in the PSP", "--by", "carol")
	if r.code != 0 {
		t.Fatalf("resolve pending = %d, %s", r.code, r.stderr)
	}
	rec = getRecord(t, fx.path, charge)
	if rec.State != journal.StateFailed || rec.Resolution.Reason != "no charge in the PSP" || rec.Resolution.By != "carol" {
		t.Errorf("resolved pending record = %+v", rec.Resolution)
	}

	// A live lease in a bbolt journal belongs to a process that stopped
	// (agentctl holds the only writer's lock): resolved without --force.
	// (The PostgreSQL test checks the refusal of a live owner's intent.)
	ship := fx.keys[fxShip].String()
	r = agentctl(t, false, "resolve", ship, "--journal", fx.path, "--succeeded")
	if r.code != 0 {
		t.Errorf("resolve of a dead owner's live lease = %d, %s", r.code, r.stderr)
	}
	// The fenced-out owner cannot complete it afterwards.
	s, err := bolt.Open(fx.path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Complete(context.Background(), journal.Completion{Key: fx.keys[fxShip], Token: 1, State: journal.StateSucceeded})
	if err == nil {
		t.Errorf("the old owner completed a resolved record")
	}
}

func TestResolveBadUsage(t *testing.T) {
	fx := buildFixture(t)
	key := fx.keys[fxEmail].String()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{key}, exitUsage, "exactly one of --succeeded or --failed"},
		{[]string{key, "--succeeded", "--failed"}, exitUsage, "exactly one of"},
		{[]string{key, "--failed"}, exitUsage, "--failed needs --reason"},
		{[]string{key, "--succeeded", "--output", "{nope"}, exitUsage, "--output is not valid JSON"},
		{[]string{key, "--failed", "--reason", "x", "--output", "{}"}, exitUsage, "--output goes with --succeeded"},
		{[]string{"--succeeded"}, exitUsage, "exactly one KEY"},
		{[]string{"00000000-0000-5000-8000-000000000001", "--succeeded"}, exitNotFound, "no record for key"},
		{[]string{fx.keys[fxBook].String(), "--succeeded"}, exitConflict, "already settled as failed"},
	}
	for _, tt := range tests {
		r := agentctl(t, false, append([]string{"resolve", "--journal", fx.path}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("resolve %v = %d, %q; want %d and one line containing %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}

func TestGC(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "gc", "--journal", fx.path, "--json", "--dry-run")
	if r.stdout != `{"dry_run":true,"removed":1,"kept_unknown":0}`+"\n" {
		t.Errorf("gc --dry-run --json = %q", r.stdout)
	}
	r = agentctl(t, true, "gc", "--journal", fx.path)
	if r.code != 0 || r.stdout != "removed 1 expired records; agentctl compact shrinks the file\n" {
		t.Errorf("gc = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	r = agentctl(t, false, "show", fx.keys[fxOld].String(), "--journal", fx.path)
	if r.code != exitNotFound {
		t.Errorf("show of the collected record = %d; want %d", r.code, exitNotFound)
	}
	r = agentctl(t, false, "stats", "--journal", fx.path, "--json")
	if !strings.Contains(r.stdout, fmt.Sprintf(`"records":%d,"expired":0`, fixtureSize-1)) {
		t.Errorf("stats after gc = %s", r.stdout)
	}
}
