package reissue_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
	"github.com/agentonce/agentonce/journal/reissue"
)

// Reissue and DecideBegin decide from the same rules: for every record a
// store can hold, what Begin does (without a Retake) is what Reissue's step
// says a store decides alone.
func TestReissueAgreesWithDecideBegin(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	type rec struct {
		name string
		r    journal.Record
		want reissue.Step // for an Unkeyed tool
	}
	base := func(st journal.State, class string, expires, lease, quiet time.Time, last string) journal.Record {
		return journal.Record{Key: uuid.New(), State: st, ErrorClass: class, Expires: expires,
			Lease:    journal.Lease{Owner: "o", Token: 2, Expires: lease},
			Attempts: []journal.Attempt{{ID: "a", Start: past, QuietAt: quiet, Class: last}}}
	}
	var zero time.Time
	cases := []rec{
		{"succeeded", base(journal.StateSucceeded, "", future, zero, zero, "success"), reissue.Answer},
		{"succeeded expired", base(journal.StateSucceeded, "", past, zero, zero, "success"), reissue.Anew},
		{"succeeded no TTL", base(journal.StateSucceeded, "", zero, zero, zero, "success"), reissue.Answer},
		{"failed terminal", base(journal.StateFailed, "terminal", future, zero, zero, "terminal"), reissue.Answer},
		{"failed not executed", base(journal.StateFailed, journal.ClassNotExecuted, future, zero, zero, journal.ClassNotExecuted), reissue.Retry},
		{"failed resolved", base(journal.StateFailed, journal.ClassResolved, future, zero, zero, journal.ClassResolved), reissue.Answer},
		{"failed expired", base(journal.StateFailed, "terminal", past, zero, zero, "terminal"), reissue.Anew},
		{"failed no TTL", base(journal.StateFailed, "terminal", zero, zero, zero, "terminal"), reissue.Answer},
		{"suppressed mismatch", base(journal.StateSuppressed, journal.ClassMismatch, future, zero, zero, ""), reissue.Answer},
		{"suppressed in flight, settling", base(journal.StateSuppressed, journal.ClassInFlight, future, zero, future, journal.ClassInFlight), reissue.Wait},
		{"suppressed in flight, quiet", base(journal.StateSuppressed, journal.ClassInFlight, future, zero, past, journal.ClassInFlight), reissue.Reconcile},
		{"suppressed no TTL", base(journal.StateSuppressed, journal.ClassMismatch, zero, zero, zero, ""), reissue.Answer},
		{"unknown, settling", base(journal.StateUnknown, "maybe-executed", future, zero, future, "maybe-executed"), reissue.Wait},
		{"unknown, quiet", base(journal.StateUnknown, "maybe-executed", future, zero, past, "maybe-executed"), reissue.Reconcile},
		{"unknown past TTL", base(journal.StateUnknown, "maybe-executed", past, zero, past, "maybe-executed"), reissue.Reconcile},
		{"pending, live lease", base(journal.StatePending, "", future, future, zero, ""), reissue.Wait},
		{"pending, settling", base(journal.StatePending, "", future, past, future, ""), reissue.Wait},
		{"pending, owner stopped", base(journal.StatePending, "", future, past, past, ""), reissue.Reconcile},
		{"pending, stopped after not executed", base(journal.StatePending, "", future, past, past, journal.ClassNotExecuted), reissue.Retry},
		{"pending past TTL", base(journal.StatePending, "", past, past, past, ""), reissue.Reconcile},
		{"pending no TTL", base(journal.StatePending, "", zero, past, zero, ""), reissue.Reconcile},
	}
	for _, c := range cases {
		r := c.r
		if got := reissue.Of(&r, journal.Unkeyed, now); got != c.want {
			t.Errorf("Of(%s, Unkeyed) = %v; want %v", c.name, got, c.want)
		}
		step := reissue.Of(&r, journal.Keyed, now)
		if c.want == reissue.Reconcile && step != reissue.Retry {
			t.Errorf("Of(%s, Keyed) = %v; want retry (a keyed tool absorbs a repeat)", c.name, step)
		}
		d := machine.DecideBegin(&r, &journal.BeginRequest{Key: r.Key, Owner: "p", AttemptID: "b", Effect: journal.Unkeyed}, now)
		var want journal.BeginOutcome
		switch {
		case step == reissue.Anew:
			want = journal.Started
		case r.State == journal.StatePending && step == reissue.Wait:
			want = journal.Held
		case r.State == journal.StatePending:
			want = journal.TakenOver
		default:
			want = journal.Answered
		}
		if d.Result.Outcome != want {
			t.Errorf("DecideBegin(%s) = %v; Reissue says %v, so want %v", c.name, d.Result.Outcome, step, want)
		}
		if got := journal.Expired(&r, now); got != (step == reissue.Anew) {
			t.Errorf("Expired(%s) = %v; Reissue says %v", c.name, got, step)
		}
	}
}

// A Begin that starts a new intent makes its record and the array of its
// first attempt in one allocation: it is on every new call's path. The
// decision's Write and its Result share that attempt, as they did.
func TestDecideBeginNewAllocs(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := &journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: "a", Effect: journal.Keyed}
	var d machine.BeginDecision
	allocs := testing.AllocsPerRun(100, func() { d = machine.DecideBegin(nil, req, now) })
	if allocs > 1 {
		t.Errorf("DecideBegin of a new key allocates %v times; want 1", allocs)
	}
	if d.Result.Outcome != journal.Started || d.Write == nil || len(d.Write.Attempts) != 1 || d.Write.Attempts[0].ID != "a" ||
		len(d.Result.Record.Attempts) != 1 || d.Result.Record.Attempts[0] != d.Write.Attempts[0] {
		t.Errorf("DecideBegin(nil) = %+v; want Started with one attempt \"a\" written and answered", d)
	}
}

// Request is the server's re-issue: a failure that committed nothing runs
// again whatever its expiry, so does an answer older than the TTL, a known
// outcome within a minute of its expiry is left to Begin, any other
// settled outcome answers, and a pending record is Of's for an Unkeyed
// intent.
func TestRequest(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	far, near, past := now.Add(time.Hour), now.Add(30*time.Second), now.Add(-time.Second)
	var zero time.Time
	rec := func(st journal.State, class string, expires, lease time.Time) journal.Record {
		return journal.Record{State: st, ErrorClass: class, Expires: expires,
			Lease: journal.Lease{Owner: "o", Token: 1, Expires: lease}}
	}
	resolved := func(st journal.State, class string) journal.Record {
		r := rec(st, class, far, zero)
		r.Resolution = &journal.Resolution{State: st, Reason: "checked", By: "op"}
		return r
	}
	cases := []struct {
		name string
		r    journal.Record
		want reissue.Step
	}{
		{"succeeded", rec(journal.StateSucceeded, "", far, zero), reissue.Answer},
		{"succeeded within the minute", rec(journal.StateSucceeded, "", near, zero), reissue.Anew},
		{"succeeded expired", rec(journal.StateSucceeded, "", past, zero), reissue.Anew},
		{"succeeded no TTL", rec(journal.StateSucceeded, "", zero, zero), reissue.Answer},
		{"succeeded by an operator", resolved(journal.StateSucceeded, ""), reissue.Answer},
		{"failed released", rec(journal.StateFailed, reissue.ClassReleased, far, zero), reissue.Retry},
		{"failed released, expired", rec(journal.StateFailed, reissue.ClassReleased, past, zero), reissue.Retry},
		{"failed by an operator", resolved(journal.StateFailed, journal.ClassResolved), reissue.Retry},
		{"failed otherwise", rec(journal.StateFailed, "terminal", far, zero), reissue.Answer},
		{"failed within the minute", rec(journal.StateFailed, "terminal", near, zero), reissue.Anew},
		{"suppressed", rec(journal.StateSuppressed, journal.ClassMismatch, far, zero), reissue.Answer},
		{"unknown", rec(journal.StateUnknown, "panic", far, zero), reissue.Answer},
		{"unknown past TTL", rec(journal.StateUnknown, "panic", past, zero), reissue.Answer},
		{"pending, live lease", rec(journal.StatePending, "", far, far), reissue.Wait},
		{"pending, owner stopped", rec(journal.StatePending, "", far, past), reissue.Reconcile},
	}
	for _, c := range cases {
		if got := reissue.Request(&c.r, now, 0); got != c.want {
			t.Errorf("Request(%s, no TTL) = %v; want %v", c.name, got, c.want)
		}
	}

	// Under the middleware's TTL, counted from the start of the run that
	// answered: a succeeded or failed answer that old runs again (a slow
	// handler's record the store still keeps); an operator's verdict, an
	// unknown outcome and a younger answer do not.
	ran := func(r journal.Record, start time.Time) journal.Record {
		r.Attempts = []journal.Attempt{{ID: "a", Start: start, End: start.Add(time.Second)}}
		return r
	}
	const ttl = 10 * time.Second
	old, young := now.Add(-ttl), now.Add(-ttl+time.Millisecond)
	for _, c := range []struct {
		name string
		r    journal.Record
		want reissue.Step
	}{
		{"succeeded, ran a TTL ago", ran(rec(journal.StateSucceeded, "", far, zero), old), reissue.Retry},
		{"succeeded, ran a TTL ago, within the store's minute", ran(rec(journal.StateSucceeded, "", near, zero), old), reissue.Retry},
		{"succeeded, ran less than a TTL ago", ran(rec(journal.StateSucceeded, "", far, zero), young), reissue.Answer},
		{"failed, ran a TTL ago", ran(rec(journal.StateFailed, "terminal", far, zero), old), reissue.Retry},
		{"succeeded by an operator, ran a TTL ago", ran(resolved(journal.StateSucceeded, ""), old), reissue.Answer},
		{"unknown, ran a TTL ago", ran(rec(journal.StateUnknown, "panic", far, zero), old), reissue.Answer},
		{"succeeded, no attempt", rec(journal.StateSucceeded, "", far, zero), reissue.Answer},
	} {
		if got := reissue.Request(&c.r, now, ttl); got != c.want {
			t.Errorf("Request(%s, TTL %v) = %v; want %v", c.name, ttl, got, c.want)
		}
	}
}
