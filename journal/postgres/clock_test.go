package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// skew is how far the client clocks of the tests below are off.
const skew = 2 * time.Minute

// skewed opens a store in schema as a client whose clock (Options.Now) is
// off by d, without the tests' server-clock seam: the server decides.
func skewed(t *testing.T, schema string, d time.Duration) *postgres.Store {
	return openClient(t, schema, &journal.Options{Now: func() time.Time { return time.Now().Add(d) }})
}

// near reports whether got is within a minute of want: it tells the
// server's clock from a client clock two minutes off, and is no timing
// assertion (the server runs on this host, as in CI).
func near(got, want time.Time) bool {
	d := got.Sub(want)
	return d > -time.Minute && d < time.Minute
}

// TestClientClockDoesNotDecideLeases runs two stores on one schema whose
// client clocks are two minutes ahead and behind: a live lease of 10 s held
// by either is never taken over by the other, nor renewed into the past.
func TestClientClockDoesNotDecideLeases(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	ahead, behind := skewed(t, schema, skew), skewed(t, schema, -skew)
	for i, tc := range []struct {
		name          string
		holder, other *postgres.Store
	}{
		{"behind holds, ahead asks", behind, ahead},
		{"ahead holds, behind asks", ahead, behind},
	} {
		req := request(i, `{}`)
		req.LeaseTTL = 10 * time.Second
		res, err := tc.holder.Begin(ctx, req)
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("%s: Begin = %v, %v; want Started", tc.name, res.Outcome, err)
		}
		if now := time.Now(); !near(res.Record.Created, now) || !near(res.Record.Lease.Expires, now.Add(req.LeaseTTL)) {
			t.Errorf("%s: Begin record created %v, lease until %v; want the server's time %v, +10s",
				tc.name, res.Record.Created, res.Record.Lease.Expires, now)
		}
		other := req
		other.Owner = "owner-b"
		if got, err := tc.other.Begin(ctx, other); err != nil || got.Outcome != journal.Held {
			t.Fatalf("%s: Begin by the other store = %v, %v; want Held (the lease is live by the server's clock)",
				tc.name, outcomeName(got.Outcome), err)
		}
		exp, err := tc.holder.Renew(ctx, journal.RenewRequest{Key: req.Key, Token: res.Token, LeaseTTL: req.LeaseTTL})
		if err != nil || !near(exp, time.Now().Add(req.LeaseTTL)) {
			t.Fatalf("%s: Renew = %v, %v; want the server's time +10s", tc.name, exp, err)
		}
		if err := tc.holder.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "attempt-2",
			LeaseTTL: req.LeaseTTL}); err != nil {
			t.Fatalf("%s: StartAttempt = %v", tc.name, err)
		}
		if got, err := tc.other.Begin(ctx, other); err != nil || got.Outcome != journal.Held {
			t.Fatalf("%s: Begin by the other store after StartAttempt = %v, %v; want Held", tc.name, outcomeName(got.Outcome), err)
		}
		if st, err := tc.other.Stats(ctx); err != nil || st.Expired != 0 || st.OverdueUnknown != 0 {
			t.Fatalf("%s: Stats by the other store = %+v, %v; want nothing expired or overdue", tc.name, st, err)
		}
		done, err := tc.holder.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded})
		if err != nil {
			t.Fatalf("%s: Complete by the holder = %v; want it to still own the lease", tc.name, err)
		}
		if a := done.Attempts; len(a) != 2 || !near(a[0].End, time.Now()) || !near(a[1].Start, time.Now()) || !near(done.Updated, time.Now()) {
			t.Errorf("%s: completed record %+v; want its times from the server's clock", tc.name, done)
		}
	}
}

// TestClientClockDoesNotDecideExpiry: a record's TTL and a lease's end are
// judged by the server's clock, whichever way the client's is off.
func TestClientClockDoesNotDecideExpiry(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	ahead, behind := skewed(t, schema, skew), skewed(t, schema, -skew)

	// Alive by the server for a minute more: the store ahead must not see
	// it expired.
	req := request(1, `{}`)
	req.RecordTTL = time.Minute
	res, err := behind.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin = %v, %v; want Started", res.Outcome, err)
	}
	if _, err := behind.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
		t.Fatal(err)
	}
	late := req
	late.Owner = "owner-b"
	if got, err := ahead.Begin(ctx, late); err != nil || got.Outcome != journal.Answered {
		t.Fatalf("Begin by the store ahead = %v, %v; want Answered (the record lives by the server's clock)", outcomeName(got.Outcome), err)
	}
	if res, err := ahead.GC(ctx, journal.GCOptions{}); err != nil || res.Removed != 0 {
		t.Fatalf("GC by the store ahead = %+v, %v; want nothing removed", res, err)
	}

}

// TestClientClockDoesNotHideExpiry: a record expired by the server a
// minute ago, and a lease that ended a minute ago, are so for a client
// whose clock is behind.
func TestClientClockDoesNotHideExpiry(t *testing.T) {
	ctx := context.Background()
	behind := skewed(t, newSchema(t), -skew)
	now := time.Now()
	req := request(2, `{}`)
	old := journal.Record{Version: journal.SchemaVersion, Key: req.Key, Intent: req.Intent, Fingerprint: req.Fingerprint}
	old.State, old.Attempts = journal.StateSucceeded, []journal.Attempt{{ID: "a1", Start: now.Add(-2 * time.Hour), End: now.Add(-2 * time.Hour)}}
	old.Created, old.Updated, old.Expires = now.Add(-2*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Minute)
	old.Lease = journal.Lease{Owner: "gone", Token: 4, Expires: now.Add(-2 * time.Hour)}
	abandoned := old
	abandoned.Key, abandoned.Intent.Discriminator = request(3, `{}`).Key, "3"
	abandoned.State, abandoned.Attempts = journal.StatePending, []journal.Attempt{{ID: "a1", Start: now.Add(-2 * time.Minute)}}
	abandoned.Updated, abandoned.Expires = now.Add(-2*time.Minute), now.Add(time.Hour)
	abandoned.Lease.Expires = now.Add(-time.Minute)
	for _, r := range []journal.Record{old, abandoned} {
		if err := behind.Import(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := behind.Stats(ctx); err != nil || st.Expired != 1 {
		t.Fatalf("Stats by the store behind: Expired = %d, %v; want 1", st.Expired, err)
	}
	again := request(2, `{}`)
	again.Fingerprint = old.Fingerprint
	if got, err := behind.Begin(ctx, again); err != nil || got.Outcome != journal.Started || got.Token != 5 {
		t.Fatalf("Begin by the store behind of the expired record = %v token %d, %v; want Started token 5",
			outcomeName(got.Outcome), got.Token, err)
	}
	take := request(3, `{}`)
	take.Fingerprint = abandoned.Fingerprint
	if got, err := behind.Begin(ctx, take); err != nil || got.Outcome != journal.TakenOver {
		t.Fatalf("Begin by the store behind of the abandoned record = %v, %v; want TakenOver (its lease ended by the server's clock)",
			outcomeName(got.Outcome), err)
	}
}
