package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

// request returns a BeginRequest for intent n of a test turn.
func request(n int, input string) journal.BeginRequest {
	in := []byte(input)
	return journal.BeginRequest{
		Key:         uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprintf("intent-%d", n))),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge", Discriminator: fmt.Sprint(n)},
		Fingerprint: keyderive.FingerprintOf(in),
		Input:       in,
		Owner:       "owner-a",
		AttemptID:   "attempt-1",
		LeaseTTL:    time.Minute,
		Durable:     true,
	}
}

func TestOpenSharesNamespaceAndMigratesOnce(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	schema := newSchema(t)

	// Several processes starting at once: the advisory lock lets one create
	// the journal and the others read it.
	const n = 8
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(ctx, url, &postgres.Options{Schema: schema, MaxConns: 2})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent Open %d = %v", i, errs[i])
		}
		defer stores[i].Close()
	}
	ns := stores[0].Namespace()
	if ns == uuid.Nil {
		t.Fatalf("Namespace() = nil UUID; want a random one")
	}
	for i, s := range stores {
		if got := s.Namespace(); got != ns {
			t.Errorf("store %d Namespace() = %s; want %s (fleet-shared)", i, got, ns)
		}
	}
	var metaRows, version int
	err := stores[0].Pool().QueryRow(ctx, `SELECT count(*), max(version) FROM `+pgx.Identifier{schema}.Sanitize()+`.meta`).
		Scan(&metaRows, &version)
	if err != nil || metaRows != 1 || version != postgres.SchemaVersion {
		t.Fatalf("meta rows = %d, version %d, err %v; want 1 row at version %d", metaRows, version, err, postgres.SchemaVersion)
	}

	// The same namespace given explicitly is accepted; a different one is not.
	s, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema, Journal: journal.Options{Namespace: ns}})
	if err != nil {
		t.Fatalf("Open with the stored namespace = %v; want nil", err)
	}
	s.Close()
	_, err = postgres.Open(ctx, url, &postgres.Options{Schema: schema, Journal: journal.Options{Namespace: uuid.New()}})
	if !errors.Is(err, journal.ErrNamespaceMismatch) {
		t.Fatalf("Open with another namespace = %v; want ErrNamespaceMismatch", err)
	}
}

func TestOpenNewNamespaceFromOptions(t *testing.T) {
	ns := uuid.New()
	s := openStore(t, &journal.Options{Namespace: ns})
	if got := s.Namespace(); got != ns {
		t.Fatalf("Namespace() = %s; want %s from Options", got, ns)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	s := openIn(t, schema, nil)
	if _, err := s.Pool().Exec(ctx, `UPDATE `+pgx.Identifier{schema}.Sanitize()+`.meta SET version = 99`); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := postgres.Open(ctx, pgURL(t), &postgres.Options{Schema: schema, Journal: journal.Options{ReadOnly: ro}})
		if !errors.Is(err, journal.ErrNewerVersion) {
			t.Errorf("Open(read-only %v) of a version-99 schema = %v; want ErrNewerVersion", ro, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	_, err := postgres.Open(ctx, pgURL(t), &postgres.Options{Schema: schema, Journal: journal.Options{ReadOnly: true}})
	if !errors.Is(err, postgres.ErrNoJournal) {
		t.Errorf("read-only Open of an empty schema = %v; want ErrNoJournal", err)
	}
	// Nothing listens on port 1: Open fails, it does not hang or succeed.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", nil)
	if err == nil {
		t.Errorf("Open of an unreachable server = nil; want an error")
	}
	_, err = postgres.Open(ctx, "postgres://a:secret@127.0.0.1:1/x?sslmode=bogus", nil)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open of a bad URL = %v; want an error that does not show the password", err)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := newSchema(t)
	rw := openIn(t, schema, &journal.Options{Now: clk.Now})
	done := request(1, `{"amount":1}`)
	res, err := rw.Begin(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Complete(ctx, journal.Completion{Key: done.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	ro := openIn(t, schema, &journal.Options{ReadOnly: true, Now: clk.Now})
	if ro.Namespace() != rw.Namespace() {
		t.Errorf("read-only Namespace() = %s; want %s", ro.Namespace(), rw.Namespace())
	}
	if got, err := ro.Begin(ctx, done); err != nil || got.Outcome != journal.Answered {
		t.Errorf("read-only Begin(settled) = %v, %v; want Answered", got.Outcome, err)
	}
	if _, err := ro.Begin(ctx, request(2, `{}`)); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("read-only Begin(new) = %v; want ErrReadOnly", err)
	}
	if _, err := ro.Resolve(ctx, done.Key, journal.Resolution{State: journal.StateFailed}); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("read-only Resolve = %v; want ErrReadOnly", err)
	}
	if _, err := ro.GC(ctx, journal.GCOptions{}); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("read-only GC = %v; want ErrReadOnly", err)
	}
	// The server refuses writes too: the pool's sessions are read-only.
	_, err = ro.Pool().Exec(ctx, `DELETE FROM `+pgx.Identifier{schema}.Sanitize()+`.records`)
	if err == nil {
		t.Errorf("DELETE through the read-only pool = nil; want a read-only transaction error")
	}
	if _, err := ro.Get(ctx, done.Key); err != nil {
		t.Errorf("read-only Get = %v", err)
	}
}

func TestBeginOutcomes(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})

	req := request(1, `{"amount":5}`)
	first, err := s.Begin(ctx, req)
	if err != nil || first.Outcome != journal.Started || first.Token != 1 {
		t.Fatalf("Begin(new) = %v token %d, %v; want Started token 1", first.Outcome, first.Token, err)
	}
	if r := first.Record; r.State != journal.StatePending || len(r.Attempts) != 1 || r.Attempts[0].ID != "attempt-1" ||
		r.Lease.Owner != "owner-a" || !r.Lease.Expires.Equal(clk.Now().Add(time.Minute)) ||
		!r.Expires.Equal(clk.Now().Add(journal.DefaultTTL)) || string(r.Input) != `{"amount":5}` {
		t.Fatalf("Begin(new).Record = %+v; want pending, attempt-1, owner-a's lease for a minute, default TTL", r)
	}

	other := req
	other.Owner = "owner-b"
	if got, err := s.Begin(ctx, other); err != nil || got.Outcome != journal.Held {
		t.Fatalf("Begin(live lease) = %v, %v; want Held", got.Outcome, err)
	}
	changed := other
	changed.Fingerprint = keyderive.FingerprintOf([]byte(`{"amount":6}`))
	changed.Intent.Turn = "other" // so that its suppression does not guard the takeover below
	if got, err := s.Begin(ctx, changed); err != nil || got.Outcome != journal.Mismatch {
		t.Fatalf("Begin(other fingerprint) = %v, %v; want Mismatch", got.Outcome, err)
	}

	clk.Advance(time.Minute)
	took, err := s.Begin(ctx, other)
	if err != nil || took.Outcome != journal.TakenOver || took.Token != 2 || took.Record.Lease.Owner != "owner-b" {
		t.Fatalf("Begin(expired lease) = %v token %d owner %q, %v; want TakenOver token 2 owner-b",
			took.Outcome, took.Token, took.Record.Lease.Owner, err)
	}
	// The first owner is fenced out; the new one completes.
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: 1, State: journal.StateSucceeded}); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("Complete(stale token) = %v; want ErrFenced", err)
	}
	if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: 1, ID: "x"}); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("StartAttempt(stale token) = %v; want ErrFenced", err)
	}
	if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: 2, ID: "attempt-2",
		PrevClass: "unknown", PrevError: "owner died", LeaseTTL: time.Minute}); err != nil {
		t.Fatalf("StartAttempt(owner) = %v", err)
	}
	clk.Advance(time.Second)
	done, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: 2, State: journal.StateSucceeded, Output: []byte(`{"id":"ch_1"}`)})
	if err != nil {
		t.Fatalf("Complete(owner) = %v", err)
	}
	if len(done.Attempts) != 2 || done.Attempts[0].Class != "unknown" || done.Attempts[0].Error != "owner died" ||
		done.Attempts[1].End.IsZero() || done.State != journal.StateSucceeded || string(done.Output) != `{"id":"ch_1"}` {
		t.Fatalf("Complete(owner) = %+v; want succeeded with both attempts closed", done)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: 2, State: journal.StateFailed}); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("second Complete = %v; want ErrFenced", err)
	}
	replay, err := s.Begin(ctx, req)
	if err != nil || replay.Outcome != journal.Answered || string(replay.Record.Output) != `{"id":"ch_1"}` {
		t.Fatalf("Begin(settled) = %v %q, %v; want Answered with the first output", replay.Outcome, replay.Record.Output, err)
	}

	// Retake puts a settled record back to pending under a new token.
	retake := req
	retake.Retake = func(r *journal.Record) bool { return r.State == journal.StateSucceeded }
	again, err := s.Begin(ctx, retake)
	if err != nil || again.Outcome != journal.TakenOver || again.Token != 3 || again.Record.State != journal.StatePending {
		t.Fatalf("Begin(Retake) = %v token %d state %s, %v; want TakenOver token 3 pending", again.Outcome, again.Token, again.Record.State, err)
	}

	// A record past its TTL is absent for Begin: the late call runs anew,
	// and the token keeps rising so old owners stay fenced.
	late := request(2, `{}`)
	late.RecordTTL = time.Hour
	r1, err := s.Begin(ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: late.Key, Token: r1.Token, State: journal.StateFailed, ErrorClass: "terminal"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	r2, err := s.Begin(ctx, late)
	if err != nil || r2.Outcome != journal.Started || r2.Token != r1.Token+1 || r2.Record.State != journal.StatePending {
		t.Fatalf("Begin(expired record) = %v token %d, %v; want Started token %d", r2.Outcome, r2.Token, err, r1.Token+1)
	}

	if _, err := s.Complete(ctx, journal.Completion{Key: uuid.New(), Token: 1, State: journal.StateFailed}); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Complete(no record) = %v; want ErrNotFound", err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: 3, State: journal.StatePending}); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("Complete(state pending) = %v; want ErrInvalid", err)
	}
	if _, err := s.Begin(ctx, journal.BeginRequest{}); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("Begin(zero key) = %v; want ErrInvalid", err)
	}
}

func TestNonDurableBeginIsVisible(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	req := request(1, `{}`)
	req.Durable = false
	res, err := s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin(non-durable) = %v, %v; want Started", res.Outcome, err)
	}
	if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "attempt-2"}); err != nil {
		t.Fatalf("StartAttempt(non-durable) = %v", err)
	}
	// Asynchronous commit delays only the WAL flush: another connection
	// sees the record at once.
	got, err := s.Get(ctx, req.Key)
	if err != nil || len(got.Attempts) != 2 {
		t.Fatalf("Get after a non-durable Begin = %d attempts, %v; want 2", len(got.Attempts), err)
	}
}

func TestGuard(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	sup := request(1, `{"amount":5}`)
	res, err := s.Begin(ctx, sup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: sup.Key, Token: res.Token, State: journal.StateSuppressed, ErrorClass: "mismatch"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*journal.BeginRequest)
		want   journal.BeginOutcome
	}{
		{"same turn, altered input", func(r *journal.BeginRequest) {}, journal.Guarded},
		{"same turn, guard off", func(r *journal.BeginRequest) { r.Guard = journal.GuardOff }, journal.Started},
		{"next turn, turn guard", func(r *journal.BeginRequest) { r.Intent.Turn = "2" }, journal.Started},
		{"next turn, session guard", func(r *journal.BeginRequest) { r.Intent.Turn = "2"; r.Guard = journal.GuardSession }, journal.Guarded},
		{"other tool", func(r *journal.BeginRequest) { r.Intent.Tool = "refund" }, journal.Started},
		{"other tenant", func(r *journal.BeginRequest) { r.Intent.Tenant = "globex" }, journal.Started},
		{"other session", func(r *journal.BeginRequest) { r.Intent.Session = "s2"; r.Guard = journal.GuardSession }, journal.Started},
	}
	for i, tt := range tests {
		req := request(100+i, `{"amount":6}`)
		tt.change(&req)
		got, err := s.Begin(ctx, req)
		if err != nil || got.Outcome != tt.want {
			t.Errorf("%s: Begin = %v, %v; want %v", tt.name, got.Outcome, err, tt.want)
			continue
		}
		if tt.want == journal.Guarded {
			if got.Record.Key != sup.Key {
				t.Errorf("%s: Guarded record = %s; want the suppressing %s", tt.name, got.Record.Key, sup.Key)
			}
			if _, err := s.Get(ctx, req.Key); !errors.Is(err, journal.ErrNotFound) {
				t.Errorf("%s: Get(guarded key) = %v; want ErrNotFound (nothing written)", tt.name, err)
			}
		}
	}
	// An expired suppression no longer guards.
	clk.Advance(journal.DefaultTTL)
	if got, err := s.Begin(ctx, request(200, `{"amount":7}`)); err != nil || got.Outcome != journal.Started {
		t.Errorf("Begin after the suppression expired = %v, %v; want Started", got.Outcome, err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	req := request(1, `{}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StateUnknown}); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("Resolve(to unknown) = %v; want ErrInvalid", err)
	}
	clk.Advance(time.Second)
	got, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StateFailed, Reason: "checked the ledger", By: "ops"})
	if err != nil {
		t.Fatalf("Resolve(pending) = %v", err)
	}
	if got.State != journal.StateFailed || got.Lease.Token != res.Token+1 || got.Resolution == nil ||
		got.Resolution.By != "ops" || !got.Resolution.At.Equal(clk.Now()) || got.ErrorMessage != "checked the ledger" ||
		got.Attempts[0].Class != "resolved" {
		t.Fatalf("Resolve(pending) = %+v; want failed, token %d, resolution by ops at now", got, res.Token+1)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); !errors.Is(err, journal.ErrFenced) {
		t.Errorf("Complete after Resolve = %v; want ErrFenced", err)
	}
	if _, err := s.Resolve(ctx, req.Key, journal.Resolution{State: journal.StateSucceeded}); !errors.Is(err, journal.ErrNotResolvable) {
		t.Errorf("Resolve(failed) = %v; want ErrNotResolvable", err)
	}
	if _, err := s.Resolve(ctx, uuid.New(), journal.Resolution{State: journal.StateSucceeded}); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Resolve(no record) = %v; want ErrNotFound", err)
	}
}

func TestListStatsGC(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	var keys []uuid.UUID
	for i := range 6 {
		req := request(i, fmt.Sprintf(`{"n":%d}`, i))
		req.Intent.Turn = fmt.Sprint(i % 2)
		if i >= 4 {
			req.Intent.Tool = "refund"
		}
		req.RecordTTL = time.Duration(i+1) * time.Hour
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
				t.Fatal(err)
			}
		}
		keys = append(keys, req.Key)
		clk.Advance(time.Minute)
	}
	list := func(f journal.Filter) []uuid.UUID {
		var out []uuid.UUID
		for r, err := range s.List(ctx, f) {
			if err != nil {
				t.Fatalf("List(%+v) error %v", f, err)
			}
			out = append(out, r.Key)
		}
		return out
	}
	tests := []struct {
		f    journal.Filter
		want []int
	}{
		{journal.Filter{}, []int{5, 4, 3, 2, 1, 0}},
		{journal.Filter{Limit: 2}, []int{5, 4}},
		{journal.Filter{Tool: "refund"}, []int{5, 4}},
		{journal.Filter{Tenant: "acme", Session: "s1", Turn: "1"}, []int{5, 3, 1}},
		{journal.Filter{State: journal.StatePending}, []int{3, 0}},
		{journal.Filter{Since: newClock().Now().Add(time.Minute), Until: newClock().Now().Add(3 * time.Minute)}, []int{2, 1}},
		{journal.Filter{Tenant: "nobody"}, nil},
	}
	for _, tt := range tests {
		var want []uuid.UUID
		for _, i := range tt.want {
			want = append(want, keys[i])
		}
		if got := list(tt.f); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("List(%+v) = %v; want %v", tt.f, got, want)
		}
	}
	// Stopping early releases the query.
	for range s.List(ctx, journal.Filter{}) {
		break
	}

	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 6 || st.ByState[journal.StatePending] != 2 || st.ByState[journal.StateSucceeded] != 4 ||
		st.ByTool["refund"] != 2 || st.ByTool["charge"] != 4 || st.Attempts != 6 || st.Expired != 0 ||
		!st.Oldest.Equal(newClock().Now()) || !st.Newest.Equal(newClock().Now().Add(5*time.Minute)) || st.SizeBytes <= 0 {
		t.Fatalf("Stats() = %+v; want 6 records (2 pending, 4 succeeded; 4 charge, 2 refund), 6 attempts", st)
	}

	// Two hours on: records 0 and 1 are past their TTL. 1 is settled and
	// goes; 0 is pending (its owner gone long ago: its outcome is unknown),
	// so GC keeps it for an operator.
	clk.Advance(2 * time.Hour)
	if res, err := s.GC(ctx, journal.GCOptions{DryRun: true}); err != nil || res != (journal.GCResult{Removed: 1, KeptUnknown: 1}) {
		t.Fatalf("GC(dry run) = %+v, %v; want 1 removed, 1 kept", res, err)
	}
	if st, _ := s.Stats(ctx); st.Expired != 1 || st.OverdueUnknown != 1 {
		t.Errorf("Stats().Expired, OverdueUnknown = %d, %d; want 1, 1", st.Expired, st.OverdueUnknown)
	}
	if res, err := s.GC(ctx, journal.GCOptions{}); err != nil || res != (journal.GCResult{Removed: 1, KeptUnknown: 1}) {
		t.Fatalf("GC() = %+v, %v; want 1 removed, 1 kept", res, err)
	}
	if got := list(journal.Filter{}); len(got) != 5 {
		t.Fatalf("List after GC = %d records; want 5", len(got))
	}
	if _, err := s.Get(ctx, keys[1]); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get(collected key) = %v; want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, keys[0]); err != nil {
		t.Errorf("Get(overdue pending key) = %v; want the record", err)
	}
}

func TestGCKeepsPending(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	req := request(1, `{}`)
	req.RecordTTL = time.Minute
	req.LeaseTTL = time.Hour
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	// While the lease is live the record is kept until it ends (not yet
	// overdue); once it ended, past its TTL, it is kept as overdue.
	for _, step := range []struct {
		d    time.Duration
		kept int
	}{{2 * time.Minute, 0}, {time.Hour, 1}} {
		clk.Advance(step.d)
		if res, err := s.GC(ctx, journal.GCOptions{}); err != nil || res != (journal.GCResult{KeptUnknown: step.kept}) {
			t.Fatalf("GC(pending past its TTL, %v on) = %+v, %v; want 0 removed, %d kept", step.d, res, err, step.kept)
		}
	}
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	rec := journal.Record{
		Version: journal.SchemaVersion,
		Key:     uuid.New(),
		Intent:  keyderive.Intent{Tenant: "t", Session: "s", Turn: "3", Tool: "mail"},
		Effect:  journal.Keyed,
		State:   journal.StateFailed, ErrorClass: "resolved", ErrorMessage: "r",
		Attempts:   []journal.Attempt{{ID: "a1", Start: at, End: at.Add(time.Second), Class: "maybe-executed", Error: "timeout"}},
		Lease:      journal.Lease{Owner: "w1", Token: 7, Expires: at.Add(time.Second)},
		Resolution: &journal.Resolution{State: journal.StateFailed, Reason: "r", By: "b", At: at.Add(time.Second)},
		Created:    at, Updated: at.Add(time.Second), Expires: at.Add(journal.DefaultTTL),
	}
	rec.Fingerprint = keyderive.FingerprintOf([]byte("x"))
	if err := s.Import(ctx, rec); err != nil {
		t.Fatalf("Import = %v", err)
	}
	got, err := s.Get(ctx, rec.Key)
	if err != nil {
		t.Fatal(err)
	}
	// Times come back to the nanosecond.
	if !got.Attempts[0].Start.Equal(at) || got.Lease.Token != 7 || got.Resolution == nil || !got.Resolution.At.Equal(at.Add(time.Second)) ||
		got.Input != nil || got.Output != nil || got.State != journal.StateFailed {
		t.Fatalf("Get(imported) = %+v; want the record as imported", got)
	}
	if err := s.Import(ctx, rec); err != nil {
		t.Errorf("Import(identical) = %v; want nil", err)
	}
	if err := s.Import(ctx, got); err != nil {
		t.Errorf("Import(record as read back) = %v; want nil", err)
	}
	changed := rec
	changed.ErrorMessage = "other"
	if err := s.Import(ctx, changed); !errors.Is(err, journal.ErrExists) {
		t.Errorf("Import(different) = %v; want ErrExists", err)
	}
	newer := rec
	newer.Key, newer.Version = uuid.New(), journal.SchemaVersion+1
	if err := s.Import(ctx, newer); !errors.Is(err, journal.ErrNewerVersion) {
		t.Errorf("Import(newer version) = %v; want ErrNewerVersion", err)
	}
	bad := rec
	bad.Key, bad.Intent.Tenant = uuid.New(), "a\x00b"
	if err := s.Import(ctx, bad); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("Import(tenant with NUL) = %v; want ErrInvalid naming the tenant", err)
	}
}

func TestFreeTextIsMadeStorable(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	req := request(1, `{}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateFailed,
		ErrorClass: "terminal", ErrorMessage: "bad\x00byte \xff"})
	if err != nil {
		t.Fatalf("Complete(message with NUL and invalid UTF-8) = %v; want the outcome recorded", err)
	}
	if got.ErrorMessage != "bad\uFFFDbyte \uFFFD" {
		t.Errorf("ErrorMessage = %q; want %q", got.ErrorMessage, "bad\uFFFDbyte \uFFFD")
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := s.Close(); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("second Close() = %v; want ErrClosed", err)
	}
	if _, err := s.Begin(ctx, request(1, `{}`)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Begin after Close = %v; want ErrClosed", err)
	}
	if _, err := s.Get(ctx, uuid.New()); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Get after Close = %v; want ErrClosed", err)
	}
}

// TestHammerBegin races many goroutines over a few intents: each intent is
// Started exactly once, and every other Begin sees it in flight or done.
func TestHammerBegin(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	const intents, workers = 8, 32
	var mu sync.Mutex
	startedBy := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range intents {
				req := request(i, `{}`)
				req.Owner = fmt.Sprintf("w%d", w)
				req.Durable = w%2 == 0
				res, err := s.Begin(ctx, req)
				if err != nil {
					t.Errorf("Begin = %v", err)
					return
				}
				switch res.Outcome {
				case journal.Started:
					mu.Lock()
					startedBy[req.Key]++
					mu.Unlock()
					if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
						t.Errorf("Complete = %v", err)
					}
				case journal.Held, journal.Answered:
				default:
					t.Errorf("Begin = %v; want Started, Held or Answered", res.Outcome)
				}
			}
		})
	}
	wg.Wait()
	for i := range intents {
		key := request(i, `{}`).Key
		if startedBy[key] != 1 {
			t.Errorf("intent %d Started %d times; want 1", i, startedBy[key])
		}
		if r, err := s.Get(ctx, key); err != nil || r.State != journal.StateSucceeded {
			t.Errorf("intent %d = %v, %v; want succeeded", i, r.State, err)
		}
	}
}

// TestHammerTakeOver races owners over records whose leases have expired:
// exactly one takes each over.
func TestHammerTakeOver(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openStore(t, &journal.Options{Now: clk.Now})
	const intents, workers = 4, 16
	for i := range intents {
		if _, err := s.Begin(ctx, request(i, `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Hour)
	var mu sync.Mutex
	took := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range intents {
				req := request(i, `{}`)
				req.Owner = fmt.Sprintf("w%d", w)
				res, err := s.Begin(ctx, req)
				if err != nil {
					t.Errorf("Begin = %v", err)
					return
				}
				if res.Outcome == journal.TakenOver {
					mu.Lock()
					took[req.Key]++
					mu.Unlock()
				} else if res.Outcome != journal.Held {
					t.Errorf("Begin = %v; want TakenOver or Held", res.Outcome)
				}
			}
		})
	}
	wg.Wait()
	for i := range intents {
		key := request(i, `{}`).Key
		if took[key] != 1 {
			t.Errorf("intent %d taken over %d times; want 1", i, took[key])
		}
		if r, _ := s.Get(ctx, key); r.Lease.Token != 2 {
			t.Errorf("intent %d token = %d; want 2", i, r.Lease.Token)
		}
	}
}

// TestReplayWritesNothing checks that Begin on a settled record leaves the
// row untouched (same physical tuple, same creating transaction): the
// one-statement Begin inserts only when there is no record.
func TestReplayWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, nil)
	req := request(1, `{}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
		t.Fatal(err)
	}
	version := func() string {
		var v string
		if err := s.Pool().QueryRow(ctx, `SELECT ctid::text || '/' || xmin::text FROM `+
			pgx.Identifier{s.Schema()}.Sanitize()+`.records WHERE key = $1`, req.Key).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	for range 20 {
		if got, err := s.Begin(ctx, req); err != nil || got.Outcome != journal.Answered {
			t.Fatalf("Begin(settled) = %v, %v; want Answered", got.Outcome, err)
		}
	}
	if after := version(); after != before {
		t.Fatalf("row version after replays = %s; want %s (untouched)", after, before)
	}
}

func TestIsURL(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"postgres://u@127.0.0.1:5432/db", true},
		{"postgresql://u@127.0.0.1/db?sslmode=disable", true},
		{"POSTGRES://u@h/db", true},
		{"journal.db", false},
		{"/var/lib/agent/postgres://x", false},
		{"./postgres", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := postgres.IsURL(tt.in); got != tt.want {
			t.Errorf("IsURL(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

// TestOpenMigratesOlderSchema starts from a journal whose meta table says
// version 0 (no records table yet): Open applies the migrations, keeps the
// stored namespace, and records the new version.
func TestOpenMigratesOlderSchema(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	conn, err := pgx.Connect(ctx, pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ns := uuid.New()
	for _, stmt := range []string{
		`CREATE SCHEMA ` + q,
		`CREATE TABLE ` + q + `.meta (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
			namespace uuid NOT NULL, version integer NOT NULL, created_ns bigint NOT NULL)`,
		`INSERT INTO ` + q + `.meta (namespace, version, created_ns) VALUES ('` + ns.String() + `', 0, 0)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s := openIn(t, schema, nil)
	if s.Namespace() != ns {
		t.Errorf("Namespace() after migrating = %s; want the stored %s", s.Namespace(), ns)
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM `+q+`.meta`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("meta version after Open = %d, %v; want %d", version, err, postgres.SchemaVersion)
	}
	if _, err := s.Begin(ctx, request(1, `{}`)); err != nil {
		t.Fatalf("Begin on the migrated schema = %v", err)
	}
}

// The schema can be named in the URL, so that one location string (a
// --journal flag) says everything.
func TestOpenSchemaFromURL(t *testing.T) {
	schema := newSchema(t)
	sep := "?"
	if strings.Contains(pgURL(t), "?") {
		sep = "&"
	}
	s, err := postgres.Open(context.Background(), pgURL(t)+sep+"schema="+schema, nil)
	if err != nil {
		t.Fatalf("Open(URL with schema) = %v", err)
	}
	defer s.Close()
	if s.Schema() != schema {
		t.Fatalf("Schema() = %q; want %q from the URL", s.Schema(), schema)
	}
	if _, err := postgres.Open(context.Background(), pgURL(t)+sep+"schema="+schema, &postgres.Options{Schema: "other"}); err == nil {
		t.Fatal("Open with two different schemas succeeded")
	}
}
