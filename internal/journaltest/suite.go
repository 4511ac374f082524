package journaltest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// Run runs the conformance suite against the stores open returns. open
// must return a new, empty store that uses opts (whose Now is the suite's
// clock, and whose Namespace may be set); it is called once per subtest and
// a few more times by the namespace test (with nil opts too). The suite
// closes every store it opens.
func Run(t *testing.T, open func(t *testing.T, opts *journal.Options) journal.Store) {
	tests := []struct {
		name string
		fn   func(*env)
	}{
		{"Namespace", testNamespace},
		{"BeginStarted", testBeginStarted},
		{"BeginAnswered", testBeginAnswered},
		{"BeginHeld", testBeginHeld},
		{"BeginTakenOver", testBeginTakenOver},
		{"BeginMismatch", testBeginMismatch},
		{"BeginGuarded", testBeginGuarded},
		{"BeginRetake", testBeginRetake},
		{"GuardRetake", testGuardRetake},
		{"GuardMismatch", testGuardMismatch},
		{"GuardTakeover", testGuardTakeover},
		{"MismatchRace", testMismatchRace},
		{"StartAttempt", testStartAttempt},
		{"Renew", testRenew},
		{"Settle", testSettle},
		{"CompleteFencing", testCompleteFencing},
		{"Resolve", testResolve},
		{"Approval", testApproval},
		{"ApprovalRejectAndExpire", testApprovalRejectAndExpire},
		{"ApprovalGC", testApprovalGC},
		{"TTLExpiry", testTTLExpiry},
		{"LateOutcome", testLateOutcome},
		{"GC", testGC},
		{"UnknownNeverExpires", testUnknownNeverExpires},
		{"List", testList},
		{"Stats", testStats},
		{"Import", testImport},
		{"ImportRefusesImpossible", testImportRefusesImpossible},
		{"NotFound", testNotFound},
		{"Invalid", testInvalid},
		{"Closed", testClosed},
		{"NonDurable", testNonDurable},
		{"Hammer", func(e *env) {
			Hammer(e.t, e.s, e.clk, HammerOptions{Goroutines: 16, Keys: 24, Rounds: 4})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(newEnv(t, open))
		})
	}
}

// env is one subtest's store, clock and helpers.
type env struct {
	t    *testing.T
	s    journal.Store
	clk  *Clock
	ctx  context.Context
	open func(t *testing.T, opts *journal.Options) journal.Store
}

func newEnv(t *testing.T, open func(t *testing.T, opts *journal.Options) journal.Store) *env {
	clk := &Clock{}
	s := open(t, &journal.Options{Now: clk.Now})
	t.Cleanup(func() { _ = s.Close() })
	return &env{t: t, s: s, clk: clk, ctx: context.Background(), open: open}
}

const (
	leaseTTL = 10 * time.Second
	tick     = time.Millisecond
)

func fp(b byte) keyderive.Fingerprint {
	var f keyderive.Fingerprint
	for i := range f {
		f[i] = b
	}
	return f
}

func intent(tool, session, turn string) keyderive.Intent {
	return keyderive.Intent{Tenant: "acme", Session: session, Turn: turn, Tool: tool}
}

// req is a durable request for a new key of tool "charge" in session s1,
// turn 1, owned by "owner-a".
func (e *env) req() journal.BeginRequest {
	return journal.BeginRequest{
		Key:         uuid.New(),
		Intent:      intent("charge", "s1", "1"),
		Fingerprint: fp(1),
		Effect:      journal.Keyed,
		Input:       []byte(`{"amount":"49.00","customer":8812}`),
		Owner:       "owner-a",
		AttemptID:   "att-1",
		LeaseTTL:    leaseTTL,
		Durable:     true,
	}
}

func (e *env) begin(req journal.BeginRequest, want journal.BeginOutcome) journal.BeginResult {
	e.t.Helper()
	res, err := e.s.Begin(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Begin(%s, owner %q) error: %v", req.Key, req.Owner, err)
	}
	if res.Outcome != want {
		e.t.Fatalf("Begin(%s, owner %q) = %s (record %s); want %s", req.Key, req.Owner, outcomeName(res.Outcome), res.Record.State, outcomeName(want))
	}
	return res
}

func (e *env) complete(key uuid.UUID, token uint64, state journal.State, out string) journal.Record {
	e.t.Helper()
	c := journal.Completion{Key: key, Token: token, State: state}
	if state == journal.StateSucceeded {
		c.Output = []byte(out)
	} else {
		c.ErrorClass, c.ErrorMessage = "class-"+state.String(), out
	}
	r, err := e.s.Complete(e.ctx, c)
	if err != nil {
		e.t.Fatalf("Complete(%s, token %d, %s) error: %v", key, token, state, err)
	}
	return r
}

func (e *env) get(key uuid.UUID) journal.Record {
	e.t.Helper()
	r, err := e.s.Get(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Get(%s) error: %v", key, err)
	}
	return r
}

func (e *env) wantErr(what string, err, want error) {
	e.t.Helper()
	if !errors.Is(err, want) {
		e.t.Fatalf("%s error = %v; want %v", what, err, want)
	}
}

// same fails unless got and want are the same record.
func (e *env) same(what string, got, want journal.Record) {
	e.t.Helper()
	if d := diff(got, want); d != "" {
		e.t.Fatalf("%s: %s", what, d)
	}
}

func outcomeName(o journal.BeginOutcome) string {
	names := []string{"outcome(0)", "Started", "Answered", "Held", "TakenOver", "Mismatch", "Guarded"}
	if int(o) < len(names) {
		return names[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// normalize makes records comparable: UTC times, nil for empty slices, no
// version (a store writes its own).
func normalize(r journal.Record) journal.Record {
	r.Version = 0
	utc := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return t.UTC()
	}
	nz := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		return b
	}
	r.Input, r.Output = nz(r.Input), nz(r.Output)
	r.Created, r.Updated, r.Expires = utc(r.Created), utc(r.Updated), utc(r.Expires)
	r.Lease.Expires = utc(r.Lease.Expires)
	if len(r.Attempts) == 0 {
		r.Attempts = nil
	} else {
		as := make([]journal.Attempt, len(r.Attempts))
		for i, a := range r.Attempts {
			a.Start, a.End, a.QuietAt = utc(a.Start), utc(a.End), utc(a.QuietAt)
			as[i] = a
		}
		r.Attempts = as
	}
	if r.Resolution != nil {
		res := *r.Resolution
		res.At = utc(res.At)
		res.Output = nz(res.Output)
		r.Resolution = &res
	}
	if r.Approval != nil {
		a := *r.Approval
		a.Deadline = utc(a.Deadline)
		a.Given = nil
		for _, g := range r.Approval.Given {
			g.At, g.Output = utc(g.At), nz(g.Output)
			a.Given = append(a.Given, g)
		}
		r.Approval = &a
	}
	return r
}

// diff describes how got differs from want, or returns "".
func diff(got, want journal.Record) string {
	g, w := normalize(got), normalize(want)
	if reflect.DeepEqual(g, w) {
		return ""
	}
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	var b strings.Builder
	for i := range gv.NumField() {
		gf, wf := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !reflect.DeepEqual(gf, wf) {
			fmt.Fprintf(&b, "%s = %+v; want %+v. ", gv.Type().Field(i).Name, fmtField(gf), fmtField(wf))
		}
	}
	return b.String()
}

func fmtField(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case *journal.Resolution:
		if x == nil {
			return "<nil>"
		}
		return *x
	case *journal.Approval:
		if x == nil {
			return "<nil>"
		}
		return *x
	}
	return v
}

func testNamespace(e *env) {
	if e.s.Namespace() == uuid.Nil {
		e.t.Fatalf("Namespace() = nil UUID; want a random one")
	}
	other := e.open(e.t, nil)
	defer other.Close()
	if other.Namespace() == e.s.Namespace() {
		e.t.Fatalf("two new journals share namespace %s; want a random one each", other.Namespace())
	}
	ns := uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	given := e.open(e.t, &journal.Options{Namespace: ns})
	defer given.Close()
	if got := given.Namespace(); got != ns {
		e.t.Fatalf("Namespace() with Options.Namespace %s = %s", ns, got)
	}
}

func testBeginStarted(e *env) {
	req := e.req()
	req.RecordTTL = 0 // DefaultTTL
	now := e.clk.Now()
	res := e.begin(req, journal.Started)
	if res.Token == 0 {
		e.t.Fatalf("Begin Started: Token = 0; want a fencing token")
	}
	want := journal.Record{
		Key:         req.Key,
		Intent:      req.Intent,
		Fingerprint: req.Fingerprint,
		Effect:      req.Effect,
		Input:       req.Input,
		State:       journal.StatePending,
		Attempts:    []journal.Attempt{{ID: "att-1", Start: now}},
		Lease:       journal.Lease{Owner: "owner-a", Token: res.Token, Expires: now.Add(leaseTTL)},
		Created:     now,
		Updated:     now,
		Expires:     now.Add(journal.DefaultTTL),
	}
	e.same("Begin Started record", res.Record, want)
	e.same("Get after Started", e.get(req.Key), want)

	// Fingerprint only: no input kept.
	req2 := e.req()
	req2.Input = nil
	req2.RecordTTL = time.Hour
	res2 := e.begin(req2, journal.Started)
	if got := e.get(req2.Key); got.Input != nil || !got.Expires.Equal(now.Add(time.Hour)) {
		e.t.Fatalf("Get(fingerprint-only, RecordTTL 1h): Input = %q, Expires = %v; want nil, %v", got.Input, got.Expires, now.Add(time.Hour))
	}
	_ = res2
}

func testBeginAnswered(e *env) {
	for _, st := range []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown} {
		req := e.req()
		req.Intent.Turn = st.String() // keep the suppression guard out of the way
		res := e.begin(req, journal.Started)
		e.clk.Advance(tick)
		done := e.complete(req.Key, res.Token, st, "outcome "+st.String())
		if done.State != st {
			e.t.Fatalf("Complete(%s).State = %s", st, done.State)
		}
		if st == journal.StateSucceeded && string(done.Output) != "outcome succeeded" {
			e.t.Fatalf("Complete(succeeded).Output = %q; want %q", done.Output, "outcome succeeded")
		}
		if st != journal.StateSucceeded && (done.ErrorClass != "class-"+st.String() || done.ErrorMessage != "outcome "+st.String()) {
			e.t.Fatalf("Complete(%s) error = %q %q; want %q %q", st, done.ErrorClass, done.ErrorMessage, "class-"+st.String(), "outcome "+st.String())
		}
		if a := done.Attempts[len(done.Attempts)-1]; !a.End.Equal(e.clk.Now()) {
			e.t.Fatalf("Complete(%s): last attempt End = %v; want %v", st, a.End, e.clk.Now())
		}
		e.same("Get after Complete", e.get(req.Key), done)

		// Replays by anyone, durable or not, answer from the record and
		// write nothing.
		e.clk.Advance(time.Minute)
		for _, owner := range []string{"owner-a", "owner-b"} {
			again := req
			again.Owner, again.AttemptID, again.Durable = owner, "att-x", owner == "owner-a"
			got := e.begin(again, journal.Answered)
			e.same(fmt.Sprintf("Begin(%s) replay record", st), got.Record, done)
		}
		e.same(fmt.Sprintf("Get after replay of %s", st), e.get(req.Key), done)
	}
}

func testBeginHeld(e *env) {
	req := e.req()
	res := e.begin(req, journal.Started)
	e.clk.Advance(leaseTTL - tick)
	for _, owner := range []string{"owner-b", "owner-a"} {
		again := req
		again.Owner = owner
		got := e.begin(again, journal.Held)
		e.same("Held record", got.Record, res.Record)
		if got.Token != 0 {
			e.t.Fatalf("Begin Held: Token = %d; want 0 (the caller owns nothing)", got.Token)
		}
	}
	e.same("Get after Held", e.get(req.Key), res.Record)
}

func testBeginTakenOver(e *env) {
	req := e.req()
	first := e.begin(req, journal.Started)
	now := e.clk.Advance(leaseTTL) // the lease ends at exactly this instant
	b := req
	b.Owner, b.AttemptID, b.LeaseTTL = "owner-b", "att-b", 2*leaseTTL
	got := e.begin(b, journal.TakenOver)
	if got.Token <= first.Token {
		e.t.Fatalf("TakenOver token = %d; want > %d", got.Token, first.Token)
	}
	want := first.Record
	want.Lease = journal.Lease{Owner: "owner-b", Token: got.Token, Expires: now.Add(2 * leaseTTL)}
	want.Updated = now
	// TakenOver adds no attempt (the caller decides whether to run one).
	want.Attempts = first.Record.Attempts
	if !got.Record.Expires.Before(want.Expires) {
		want.Expires = got.Record.Expires
	}
	e.same("TakenOver record", got.Record, want)
	e.same("Get after TakenOver", e.get(req.Key), want)

	// The old owner is fenced and writes nothing.
	_, err := e.s.Complete(e.ctx, journal.Completion{Key: req.Key, Token: first.Token, State: journal.StateSucceeded, Output: []byte("late")})
	e.wantErr("Complete by the old owner", err, journal.ErrFenced)
	err = e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: first.Token, ID: "att-2", LeaseTTL: leaseTTL, Durable: true})
	e.wantErr("StartAttempt by the old owner", err, journal.ErrFenced)
	e.same("Get after fenced writes", e.get(req.Key), want)

	// The new owner's lease is live: a third caller waits.
	c := req
	c.Owner = "owner-c"
	e.begin(c, journal.Held)
	done := e.complete(req.Key, got.Token, journal.StateUnknown, "no answer recorded")
	if done.Lease.Token != got.Token {
		e.t.Fatalf("Complete by the new owner: token %d; want %d", done.Lease.Token, got.Token)
	}
}

func testBeginMismatch(e *env) {
	req := e.req()
	first := e.begin(req, journal.Started)
	other := req
	other.Fingerprint, other.Owner = fp(2), "owner-b"
	got := e.begin(other, journal.Mismatch)
	e.same("Mismatch record (pending)", got.Record, first.Record)
	e.same("Get after Mismatch", e.get(req.Key), first.Record)

	done := e.complete(req.Key, first.Token, journal.StateSucceeded, "ok")
	got = e.begin(other, journal.Mismatch)
	e.same("Mismatch record (settled)", got.Record, done)
	e.same("Get after Mismatch", e.get(req.Key), done)

	// Mismatch only while the record is live: once it expired, the key is
	// free and the new payload starts anew.
	e.clk.Advance(journal.DefaultTTL)
	got = e.begin(other, journal.Started)
	if got.Record.Fingerprint != fp(2) {
		e.t.Fatalf("Started after expiry: fingerprint %s; want %s", got.Record.Fingerprint, fp(2))
	}
}

func testBeginGuarded(e *env) {
	// A suppression recorded for charge in (acme, s1, turn 1).
	sup := e.req()
	res := e.begin(sup, journal.Started)
	supRec := e.complete(sup.Key, res.Token, journal.StateSuppressed, "409 conflict")
	e.clk.Advance(tick)

	cases := []struct {
		name   string
		mutate func(*journal.BeginRequest)
		want   journal.BeginOutcome
	}{
		{"same turn, altered input, GuardTurn", func(r *journal.BeginRequest) {}, journal.Guarded},
		{"other turn, GuardTurn", func(r *journal.BeginRequest) { r.Intent.Turn = "2" }, journal.Started},
		{"other turn, GuardSession", func(r *journal.BeginRequest) { r.Intent.Turn = "2"; r.Guard = journal.GuardSession }, journal.Guarded},
		{"same turn, GuardOff", func(r *journal.BeginRequest) { r.Guard = journal.GuardOff }, journal.Started},
		{"other tool", func(r *journal.BeginRequest) { r.Intent.Tool = "refund" }, journal.Started},
		{"other session", func(r *journal.BeginRequest) { r.Intent.Session = "s2"; r.Guard = journal.GuardSession }, journal.Started},
		{"other tenant", func(r *journal.BeginRequest) { r.Intent.Tenant = "globex" }, journal.Started},
	}
	for _, tc := range cases {
		req := e.req()
		req.Fingerprint = fp(9)
		tc.mutate(&req)
		res, err := e.s.Begin(e.ctx, req)
		if err != nil {
			e.t.Fatalf("%s: Begin error: %v", tc.name, err)
		}
		if res.Outcome != tc.want {
			e.t.Fatalf("%s: Begin = %s; want %s", tc.name, outcomeName(res.Outcome), outcomeName(tc.want))
		}
		_, err = e.s.Get(e.ctx, req.Key)
		if tc.want == journal.Guarded {
			e.same(tc.name+": Guarded record", res.Record, supRec)
			e.wantErr(tc.name+": Get after Guarded (nothing written)", err, journal.ErrNotFound)
		} else if err != nil {
			e.t.Fatalf("%s: Get after Started: %v", tc.name, err)
		}
	}

	// The suppressed intent itself is answered from its record.
	again := sup
	again.Owner = "owner-b"
	e.begin(again, journal.Answered)

	// An expired suppression no longer guards.
	e.clk.Advance(journal.DefaultTTL)
	e.begin(e.req(), journal.Started)
}

func testStartAttempt(e *env) {
	req := e.req()
	res := e.begin(req, journal.Started)
	t1 := e.clk.Advance(time.Second)
	for i, durable := range []bool{true, false} {
		id := fmt.Sprintf("att-%d", i+2)
		err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{
			Key: req.Key, Token: res.Token, ID: id,
			PrevClass: "retryable", PrevError: "503 " + id,
			LeaseTTL: 3 * leaseTTL, Durable: durable,
		})
		if err != nil {
			e.t.Fatalf("StartAttempt(%s, durable %v) error: %v", id, durable, err)
		}
		got := e.get(req.Key)
		if n := len(got.Attempts); n != i+2 {
			e.t.Fatalf("after StartAttempt(%s): %d attempts; want %d", id, n, i+2)
		}
		prev, last := got.Attempts[i], got.Attempts[i+1]
		if !prev.End.Equal(t1) || prev.Class != "retryable" || prev.Error != "503 "+id {
			e.t.Fatalf("after StartAttempt(%s): previous attempt = %+v; want End %v, class retryable, error %q", id, prev, t1, "503 "+id)
		}
		if last.ID != id || !last.Start.Equal(t1) || !last.End.IsZero() {
			e.t.Fatalf("after StartAttempt(%s): new attempt = %+v; want ID %s, Start %v, open", id, last, id, t1)
		}
		if !got.Lease.Expires.Equal(t1.Add(3*leaseTTL)) || got.Lease.Token != res.Token {
			e.t.Fatalf("after StartAttempt(%s): lease = %+v; want token %d until %v", id, got.Lease, res.Token, t1.Add(3*leaseTTL))
		}
		if !got.Updated.Equal(t1) {
			e.t.Fatalf("after StartAttempt(%s): Updated = %v; want %v", id, got.Updated, t1)
		}
	}
	before := e.get(req.Key)
	err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token + 1, ID: "att-stale", Durable: true})
	e.wantErr("StartAttempt with a wrong token", err, journal.ErrFenced)
	e.same("Get after fenced StartAttempt", e.get(req.Key), before)
	err = e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: uuid.New(), Token: 1, ID: "x", Durable: true})
	e.wantErr("StartAttempt of an unknown key", err, journal.ErrNotFound)

	// The extended lease is what keeps others out.
	e.clk.Advance(2 * leaseTTL)
	other := req
	other.Owner = "owner-b"
	e.begin(other, journal.Held)
	done := e.complete(req.Key, res.Token, journal.StateSucceeded, "third time lucky")
	if n := len(done.Attempts); n != 3 || done.Attempts[2].End.IsZero() || done.Attempts[2].Class != "" {
		e.t.Fatalf("Complete: attempts = %+v; want 3, the last closed without class", done.Attempts)
	}
	err = e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "att-after", Durable: true})
	e.wantErr("StartAttempt on a settled record", err, journal.ErrFenced)
}

func testCompleteFencing(e *env) {
	req := e.req()
	res := e.begin(req, journal.Started)
	before := e.get(req.Key)
	for _, tok := range []uint64{0, res.Token + 1, res.Token - 1} {
		_, err := e.s.Complete(e.ctx, journal.Completion{Key: req.Key, Token: tok, State: journal.StateSucceeded, Output: []byte("x")})
		e.wantErr(fmt.Sprintf("Complete(token %d, record token %d)", tok, res.Token), err, journal.ErrFenced)
	}
	e.same("Get after fenced Complete", e.get(req.Key), before)
	done := e.complete(req.Key, res.Token, journal.StateFailed, "400 bad request")
	_, err := e.s.Complete(e.ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte("again")})
	e.wantErr("second Complete of a settled record", err, journal.ErrFenced)
	e.same("Get after second Complete", e.get(req.Key), done)
	_, err = e.s.Complete(e.ctx, journal.Completion{Key: uuid.New(), Token: 1, State: journal.StateSucceeded})
	e.wantErr("Complete of an unknown key", err, journal.ErrNotFound)
}

func testResolve(e *env) {
	// unknown → succeeded
	req := e.req()
	res := e.begin(req, journal.Started)
	e.complete(req.Key, res.Token, journal.StateUnknown, "timeout after send")
	at := e.clk.Advance(time.Hour)
	got, err := e.s.Resolve(e.ctx, req.Key, journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"charge":"ch_1"}`), Reason: "seen in the dashboard", By: "ops@acme"})
	if err != nil {
		e.t.Fatalf("Resolve(unknown → succeeded) error: %v", err)
	}
	if got.State != journal.StateSucceeded || string(got.Output) != `{"charge":"ch_1"}` || got.Resolution == nil ||
		got.Resolution.Reason != "seen in the dashboard" || got.Resolution.By != "ops@acme" || !got.Resolution.At.Equal(at) ||
		got.Resolution.State != journal.StateSucceeded || !got.Updated.Equal(at) {
		e.t.Fatalf("Resolve(unknown → succeeded) = %+v", got)
	}
	if got.Lease.Token <= res.Token {
		e.t.Fatalf("Resolve: token %d; want > %d", got.Lease.Token, res.Token)
	}
	e.same("Get after Resolve", e.get(req.Key), got)
	other := req
	other.Owner = "owner-b"
	rep := e.begin(other, journal.Answered)
	e.same("Begin after Resolve", rep.Record, got)
	// A Retake callback works on a copy: what it changes, the resolution
	// and output included, is not in the answer nor in the store.
	other.Retake = func(r *journal.Record) bool {
		r.Resolution.Reason, r.Resolution.Output[0], r.Output[0] = "changed", 'X', 'X'
		return false
	}
	rep = e.begin(other, journal.Answered)
	e.same("Begin after Resolve, with a Retake that writes to its record", rep.Record, got)
	e.same("Get after a Retake that writes to its record", e.get(req.Key), got)

	// pending with a live owner → failed: the owner is fenced.
	req2 := e.req()
	req2.Intent.Turn = "2"
	res2 := e.begin(req2, journal.Started)
	e.clk.Advance(tick)
	got2, err := e.s.Resolve(e.ctx, req2.Key, journal.Resolution{State: journal.StateFailed, Reason: "refunded by hand", By: "ops"})
	if err != nil {
		e.t.Fatalf("Resolve(pending → failed) error: %v", err)
	}
	if got2.State != journal.StateFailed || got2.Resolution == nil || got2.Resolution.State != journal.StateFailed {
		e.t.Fatalf("Resolve(pending → failed) = %+v", got2)
	}
	_, err = e.s.Complete(e.ctx, journal.Completion{Key: req2.Key, Token: res2.Token, State: journal.StateSucceeded, Output: []byte("late")})
	e.wantErr("Complete by the owner after Resolve", err, journal.ErrFenced)
	e.same("Get after fenced Complete", e.get(req2.Key), got2)

	// Settled records other than unknown cannot be resolved.
	for _, st := range []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed} {
		r := e.req()
		r.Intent.Turn = "settled-" + st.String()
		res := e.begin(r, journal.Started)
		done := e.complete(r.Key, res.Token, st, "done")
		_, err := e.s.Resolve(e.ctx, r.Key, journal.Resolution{State: journal.StateFailed, Reason: "x"})
		e.wantErr(fmt.Sprintf("Resolve(%s)", st), err, journal.ErrNotResolvable)
		e.same(fmt.Sprintf("Get after Resolve(%s)", st), e.get(r.Key), done)
	}
	_, err = e.s.Resolve(e.ctx, req.Key, journal.Resolution{State: journal.StateFailed, Reason: "twice"})
	e.wantErr("Resolve of a resolved record", err, journal.ErrNotResolvable)
	_, err = e.s.Resolve(e.ctx, uuid.New(), journal.Resolution{State: journal.StateFailed})
	e.wantErr("Resolve of an unknown key", err, journal.ErrNotFound)

	req3 := e.req()
	req3.Intent.Turn = "3"
	e.begin(req3, journal.Started)
	before := e.get(req3.Key)
	_, err = e.s.Resolve(e.ctx, req3.Key, journal.Resolution{State: journal.StateSuppressed})
	e.wantErr("Resolve to suppressed", err, journal.ErrInvalid)
	e.same("Get after invalid Resolve", e.get(req3.Key), before)
}

// awaiting is a request for an intent that needs two approvers within an
// hour, without the guard (a mismatch of it would arm the guard).
func (e *env) awaiting(turn string) journal.BeginRequest {
	r := e.req()
	r.Intent.Turn = turn
	r.Approvals, r.ApprovalTTL = 2, time.Hour
	r.Guard = journal.GuardOff
	return r
}

func (e *env) decide(key uuid.UUID, res journal.Resolution, want error) journal.Record {
	e.t.Helper()
	before, _ := e.s.Get(e.ctx, key)
	got, err := e.s.Resolve(e.ctx, key, res)
	if want != nil {
		e.wantErr(fmt.Sprintf("Resolve(%s by %q)", res.State, res.By), err, want)
		e.same("Get after a refused decision", e.get(key), before)
		return before
	}
	if err != nil {
		e.t.Fatalf("Resolve(%s by %q) error: %v", res.State, res.By, err)
	}
	e.same("Get after a decision", e.get(key), got)
	return got
}

func testApproval(e *env) {
	req := e.awaiting("approve")
	res := e.begin(req, journal.Held)
	if r := res.Record; r.State != journal.StateAwaiting || len(r.Attempts) != 0 || r.Approval == nil ||
		r.Approval.Need != 2 || !r.Approval.Deadline.Equal(e.clk.Now().Add(time.Hour)) {
		e.t.Fatalf("Begin(needs approval) = %+v; want awaiting 2 approvals, no attempt", r)
	}
	e.same("Get after Begin(needs approval)", e.get(req.Key), res.Record)
	e.begin(req, journal.Held)
	other := req
	other.Fingerprint = fp(2)
	e.begin(other, journal.Mismatch)

	approve := func(by string, f keyderive.Fingerprint) journal.Resolution {
		return journal.Resolution{State: journal.StatePending, By: by, Reason: "checked", Fingerprint: f}
	}
	e.decide(req.Key, approve("alice", fp(2)), journal.ErrInvalid) // another input
	e.decide(req.Key, journal.Resolution{State: journal.StatePending, Reason: "no name", Fingerprint: fp(1)}, journal.ErrInvalid)
	e.decide(req.Key, journal.Resolution{State: journal.StateSucceeded, By: "ops"}, journal.ErrNotResolvable)
	at := e.clk.Advance(time.Minute)
	got := e.decide(req.Key, approve("alice", fp(1)), nil)
	if g := got.Approval.Given; got.State != journal.StateAwaiting || len(g) != 1 || g[0].By != "alice" || !g[0].At.Equal(at) {
		e.t.Fatalf("after one approval: %+v", got)
	}
	e.decide(req.Key, approve("alice", fp(1)), journal.ErrInvalid) // the same approver twice
	e.begin(req, journal.Held)
	e.decide(req.Key, approve("bob", fp(1)), nil)
	e.decide(req.Key, approve("carol", fp(1)), journal.ErrNotResolvable) // already approved

	// Several processes re-issue the approved intent at once: one takes it.
	var wg sync.WaitGroup
	outcomes := make([]journal.BeginResult, 8)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req
			r.Owner = fmt.Sprintf("owner-%d", i)
			outcomes[i], _ = e.s.Begin(e.ctx, r)
		}()
	}
	wg.Wait()
	var taken []journal.BeginResult
	for _, o := range outcomes {
		switch o.Outcome {
		case journal.TakenOver:
			taken = append(taken, o)
		case journal.Held:
		default:
			e.t.Fatalf("Begin of an approved intent = %s; want TakenOver once and Held", outcomeName(o.Outcome))
		}
	}
	if len(taken) != 1 || len(taken[0].Record.Attempts) != 0 || taken[0].Record.State != journal.StatePending {
		e.t.Fatalf("approved intent taken %d times (%+v); want once, pending with no attempt", len(taken), taken)
	}
	tok := taken[0].Token
	e.clk.Advance(tick)
	if err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: tok, ID: "att-1", LeaseTTL: leaseTTL}); err != nil {
		e.t.Fatalf("StartAttempt after approval: %v", err)
	}
	done := e.complete(req.Key, tok, journal.StateSucceeded, `{"ok":true}`)
	if done.Approval == nil || len(done.Approval.Given) != 2 || len(done.Attempts) != 1 {
		e.t.Fatalf("after the run: %+v; want the two approvals kept and one attempt", done)
	}
	e.same("Begin after the approved run", e.begin(req, journal.Answered).Record, done)
	e.decide(req.Key, approve("dave", fp(1)), journal.ErrNotResolvable)

	// Retaken to run again (a server's retry past its TTL), an effect that
	// happened needs approving again: a new intent awaits approval.
	again := req
	again.Retake = func(*journal.Record) bool { return true }
	if r := e.begin(again, journal.Held).Record; r.State != journal.StateAwaiting || len(r.Approval.Given) != 0 || len(r.Attempts) != 0 {
		e.t.Fatalf("Begin retaking an approved run = %+v; want a new intent awaiting approval", r)
	}
}

func testApprovalRejectAndExpire(e *env) {
	req := e.awaiting("reject")
	e.begin(req, journal.Held)
	e.decide(req.Key, journal.Resolution{State: journal.StatePending, By: "alice", Fingerprint: fp(1)}, nil)
	e.clk.Advance(tick)
	e.decide(req.Key, journal.Resolution{State: journal.StateSuppressed, Reason: "wrong customer"}, journal.ErrInvalid)
	got := e.decide(req.Key, journal.Resolution{State: journal.StateSuppressed, By: "bob", Reason: "wrong customer"}, nil)
	if got.State != journal.StateSuppressed || got.ErrorClass != reissue.ClassRejected || got.Resolution == nil ||
		got.Resolution.By != "bob" || !strings.Contains(got.ErrorMessage, "wrong customer") {
		e.t.Fatalf("rejected: %+v", got)
	}
	e.same("Begin after a rejection", e.begin(req, journal.Answered).Record, got)
	e.decide(req.Key, journal.Resolution{State: journal.StatePending, By: "carol", Fingerprint: fp(1)}, journal.ErrNotResolvable)

	// Approved, but not run by the deadline: suppressed, not run.
	late := e.awaiting("late")
	e.begin(late, journal.Held)
	e.decide(late.Key, journal.Resolution{State: journal.StatePending, By: "alice", Fingerprint: fp(1)}, nil)
	e.decide(late.Key, journal.Resolution{State: journal.StatePending, By: "bob", Fingerprint: fp(1)}, nil)
	never := e.awaiting("never")
	e.begin(never, journal.Held)
	e.clk.Advance(time.Hour)
	e.decide(never.Key, journal.Resolution{State: journal.StatePending, By: "alice", Fingerprint: fp(1)}, journal.ErrNotResolvable)
	for _, r := range []journal.BeginRequest{late, never} {
		got := e.begin(r, journal.Answered).Record
		if got.State != journal.StateSuppressed || got.ErrorClass != reissue.ClassExpired || len(got.Attempts) != 0 {
			e.t.Fatalf("Begin past the approval deadline = %+v; want suppressed %s, no attempt", got, reissue.ClassExpired)
		}
		e.same("Get after the deadline", e.get(r.Key), got)
		e.same("Begin again after the deadline", e.begin(r, journal.Answered).Record, got)
	}
}

// An intent that awaited approval and is past its TTL (a TTL past its
// deadline) expires like a settled one: nothing ran. GC removes it, and
// a call made again is a new intent that asks again.
func testApprovalGC(e *env) {
	req := e.awaiting("gc")
	req.RecordTTL = time.Hour
	e.begin(req, journal.Held)
	e.clk.Advance(2 * time.Hour)
	got, err := e.s.GC(e.ctx, journal.GCOptions{})
	if err != nil || got.Removed != 1 {
		e.t.Fatalf("GC past an awaiting record's TTL = %+v, %v; want it removed", got, err)
	}
	_, err = e.s.Get(e.ctx, req.Key)
	e.wantErr("Get after GC", err, journal.ErrNotFound)
	if r := e.begin(req, journal.Held).Record; r.State != journal.StateAwaiting || len(r.Approval.Given) != 0 {
		e.t.Fatalf("Begin after GC = %+v; want a new intent awaiting approval", r)
	}
}

func testTTLExpiry(e *env) {
	req := e.req()
	req.RecordTTL = time.Hour
	res := e.begin(req, journal.Started)
	done := e.complete(req.Key, res.Token, journal.StateSucceeded, "first")
	e.clk.Advance(time.Hour - tick)
	late := req
	late.Owner = "owner-b"
	e.begin(late, journal.Answered)

	// Past its TTL the record is absent for Begin: a genuine late call runs
	// anew (docs/design.md, "Journal").
	now := e.clk.Advance(tick)
	late.AttemptID = "att-late"
	got := e.begin(late, journal.Started)
	if got.Record.State != journal.StatePending || len(got.Record.Attempts) != 1 || got.Record.Attempts[0].ID != "att-late" ||
		!got.Record.Created.Equal(now) || got.Record.Lease.Owner != "owner-b" || got.Record.Output != nil {
		e.t.Fatalf("Begin after expiry = %+v; want a new pending record", got.Record)
	}
	if got.Token <= done.Lease.Token {
		e.t.Fatalf("Begin after expiry: token %d; want > %d so the old owner stays fenced", got.Token, done.Lease.Token)
	}
	e.same("Get after restart", e.get(req.Key), got.Record)

	// A pending record whose TTL passed but whose lease is live is not
	// expired: its owner is still working.
	p := e.req()
	p.Intent.Turn = "2"
	p.RecordTTL, p.LeaseTTL = time.Second, time.Hour
	pr := e.begin(p, journal.Started)
	e.clk.Advance(time.Minute)
	other := p
	other.Owner = "owner-b"
	e.begin(other, journal.Held)
	e.complete(p.Key, pr.Token, journal.StateSucceeded, "ok")
}

// testLateOutcome: a tool slower than its record's TTL renews its lease
// past the TTL. The pending record is kept until its lease ends (and so
// exports and imports like any other), and its outcome, known with half
// its TTL or less left, is kept at least its TTL again from then: the
// retries that follow it are answered, not run a second time. An outcome
// with more than half its TTL left keeps its expiry.
func testLateOutcome(e *env) {
	req := e.req()
	req.RecordTTL, req.LeaseTTL = time.Minute, 30*time.Second
	res := e.begin(req, journal.Started)
	for range 4 { // two minutes of work, past the record's TTL
		e.clk.Advance(29 * time.Second)
		if _, err := e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: res.Token, LeaseTTL: req.LeaseTTL}); err != nil {
			e.t.Fatalf("Renew: %v", err)
		}
	}
	pending := e.get(req.Key)
	if !pending.Lease.Expires.After(pending.Created.Add(req.RecordTTL)) || pending.Expires.Before(pending.Lease.Expires) {
		e.t.Fatalf("lease until %v, record expires %v: want the lease past the TTL and the record kept until it ends",
			pending.Lease.Expires, pending.Expires)
	}
	other := e.open(e.t, &journal.Options{Now: e.clk.Now})
	defer other.Close()
	if err := other.Import(e.ctx, pending); err != nil {
		e.t.Fatalf("Import of a pending record renewed past its TTL: %v; want it taken", err)
	}

	done := e.complete(req.Key, res.Token, journal.StateSucceeded, "late")
	if want := e.clk.Now().Add(req.RecordTTL); done.Expires.Before(want) {
		e.t.Fatalf("late outcome expires %v; want %v or later, its TTL again from the outcome", done.Expires, want)
	}
	e.clk.Advance(done.Expires.Sub(e.clk.Now()) - tick)
	retry := req
	retry.Owner, retry.AttemptID = "owner-b", "att-retry"
	if got := e.begin(retry, journal.Answered); got.Record.Output == nil || string(got.Record.Output) != "late" {
		e.t.Fatalf("retry after a late outcome answered %q", got.Record.Output)
	}
	if got, err := e.s.GC(e.ctx, journal.GCOptions{}); err != nil || got.Removed != 0 {
		e.t.Fatalf("GC within the outcome's TTL = %+v, %v; want nothing removed", got, err)
	}
	e.clk.Advance(tick)
	if got, err := e.s.GC(e.ctx, journal.GCOptions{}); err != nil || got.Removed != 1 {
		e.t.Fatalf("GC past the outcome's TTL = %+v, %v; want it removed", got, err)
	}

	// Settled with more than half its TTL left: the expiry stays.
	early := e.req()
	early.Intent.Turn = "early"
	early.RecordTTL = time.Hour
	er := e.begin(early, journal.Started)
	e.clk.Advance(29 * time.Minute)
	if d := e.complete(early.Key, er.Token, journal.StateSucceeded, "ok"); !d.Expires.Equal(er.Record.Expires) {
		e.t.Fatalf("outcome with 31 of 60 minutes left expires %v; want %v, unchanged", d.Expires, er.Record.Expires)
	}
}

func testGC(e *env) {
	mk := func(turn string, recordTTL, lease time.Duration, settle bool) uuid.UUID {
		r := e.req()
		r.Intent.Turn = turn
		r.RecordTTL, r.LeaseTTL = recordTTL, lease
		res := e.begin(r, journal.Started)
		if settle {
			e.complete(r.Key, res.Token, journal.StateSucceeded, turn)
		}
		e.clk.Advance(tick)
		return r.Key
	}
	settledOld := mk("settled-old", time.Hour, leaseTTL, true)
	settledNew := mk("settled-new", 3*time.Hour, leaseTTL, true)
	pendingDead := mk("pending-dead", time.Hour, leaseTTL, false)
	pendingLive := mk("pending-live", time.Hour, 5*time.Hour, false)
	boundary := mk("boundary", 2*time.Hour, leaseTTL, true)
	// Now is exactly boundary's expiry: expired from that instant on.
	e.clk.Advance(2*time.Hour - tick)

	gc := func(what string, dry bool, want journal.GCResult) {
		e.t.Helper()
		got, err := e.s.GC(e.ctx, journal.GCOptions{DryRun: dry})
		if err != nil || got != want {
			e.t.Fatalf("%s: GC(dry run %v) = %+v, %v; want %+v", what, dry, got, err, want)
		}
	}
	// pending-dead is past its TTL, its owner maybe gone: its outcome is
	// unknown, so GC keeps it. pending-live's lease outlives its TTL: the
	// record is kept until the lease ends, not overdue.
	gc("settled-old and boundary expired", true, journal.GCResult{Removed: 2, KeptUnknown: 1})
	for _, k := range []uuid.UUID{settledOld, settledNew, pendingDead, pendingLive, boundary} {
		e.get(k) // a dry run removes nothing
	}
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	if st.Expired != 2 || st.OverdueUnknown != 1 || st.Records != 5 {
		e.t.Fatalf("Stats() = %d records, %d expired, %d overdue unknown; want 5, 2, 1", st.Records, st.Expired, st.OverdueUnknown)
	}
	gc("settled-old and boundary expired", false, journal.GCResult{Removed: 2, KeptUnknown: 1})
	for _, k := range []uuid.UUID{settledOld, boundary} {
		_, err := e.s.Get(e.ctx, k)
		e.wantErr("Get after GC", err, journal.ErrNotFound)
	}
	for _, k := range []uuid.UUID{settledNew, pendingDead, pendingLive} {
		e.get(k)
	}
	gc("second GC", false, journal.GCResult{Removed: 0, KeptUnknown: 1})
	// Leases ended, TTLs long past: the pending records stay.
	e.clk.Advance(3 * time.Hour)
	gc("three hours later", true, journal.GCResult{Removed: 1, KeptUnknown: 2})
	gc("three hours later", false, journal.GCResult{Removed: 1, KeptUnknown: 2})
	st, err = e.s.Stats(e.ctx)
	if err != nil || st.Records != 2 || st.ByState[journal.StatePending] != 2 || st.Expired != 0 || st.OverdueUnknown != 2 {
		e.t.Fatalf("Stats() after GC = %+v, %v; want the 2 pending records, overdue", st, err)
	}
}

// testUnknownNeverExpires: an unknown outcome (or a pending one, whose
// owner may be gone) past its TTL is neither absent for Begin nor removed
// by GC; an operator's Resolve is the way out.
func testUnknownNeverExpires(e *env) {
	req := e.req()
	req.RecordTTL = time.Hour
	res := e.begin(req, journal.Started)
	unknown := e.complete(req.Key, res.Token, journal.StateUnknown, "timeout after send")
	e.clk.Advance(time.Hour + time.Second) // Expires + 1s
	late := req
	late.Owner, late.AttemptID = "owner-b", "att-late"
	got := e.begin(late, journal.Answered)
	e.same("Begin of an unknown record past its TTL", got.Record, unknown)

	p := e.req()
	p.Intent.Turn = "2"
	p.RecordTTL = time.Hour
	pending := e.begin(p, journal.Started)
	e.clk.Advance(8 * 24 * time.Hour) // the unknown's Expires + 8 days
	got2, err := e.s.GC(e.ctx, journal.GCOptions{})
	if want := (journal.GCResult{KeptUnknown: 2}); err != nil || got2 != want {
		e.t.Fatalf("GC() 8 days past the TTLs = %+v, %v; want %+v", got2, err, want)
	}
	e.same("Get of the unknown record after GC", e.get(req.Key), unknown)
	e.same("Get of the pending record after GC", e.get(p.Key), pending.Record)
	if st, err := e.s.Stats(e.ctx); err != nil || st.Expired != 0 || st.OverdueUnknown != 2 {
		e.t.Fatalf("Stats() = %+v, %v; want 0 expired, 2 overdue unknown", st, err)
	}
	e.begin(late, journal.Answered)
	// The abandoned pending record is taken over, not begun anew.
	pb := p
	pb.Owner = "owner-b"
	tk := e.begin(pb, journal.TakenOver)
	if tk.Token <= pending.Token || len(tk.Record.Attempts) != 1 || !tk.Record.Created.Equal(pending.Record.Created) {
		e.t.Fatalf("Begin of an abandoned record past its TTL = %+v; want it taken over with its attempt", tk.Record)
	}

	// Resolved, the verdict expires like any settled outcome.
	resolved, err := e.s.Resolve(e.ctx, req.Key, journal.Resolution{State: journal.StateFailed, Reason: "never happened", By: "ops"})
	if err != nil {
		e.t.Fatalf("Resolve: %v", err)
	}
	e.clk.Advance(resolved.Expires.Sub(e.clk.Now()))
	got2, err = e.s.GC(e.ctx, journal.GCOptions{})
	if want := (journal.GCResult{Removed: 1, KeptUnknown: 1}); err != nil || got2 != want {
		e.t.Fatalf("GC() at the resolved record's expiry = %+v, %v; want %+v", got2, err, want)
	}
	late.AttemptID = "att-new"
	e.begin(late, journal.Started)
}

// listFixture creates records across tenants, sessions, turns, tools and
// states, one millisecond apart, and returns them oldest first.
func (e *env) listFixture() []journal.Record {
	type spec struct {
		tenant, session, turn, tool string
		state                       journal.State
	}
	specs := []spec{
		{"acme", "s1", "1", "charge", journal.StateSucceeded},
		{"acme", "s1", "1", "refund", journal.StateFailed},
		{"acme", "s1", "2", "charge", journal.StatePending},
		{"acme", "s2", "1", "charge", journal.StateUnknown},
		{"globex", "s1", "1", "charge", journal.StateSucceeded},
		{"acme", "s2", "2", "email", journal.StateSuppressed},
		{"acme", "s1", "2", "email", journal.StateSucceeded},
		{"globex", "s3", "1", "refund", journal.StatePending},
	}
	var out []journal.Record
	for i, sp := range specs {
		r := e.req()
		r.Intent = keyderive.Intent{Tenant: sp.tenant, Session: sp.session, Turn: sp.turn, Tool: sp.tool}
		r.Guard = journal.GuardOff
		r.Durable = i%2 == 0 // both paths must list alike
		res := e.begin(r, journal.Started)
		rec := res.Record
		if sp.state != journal.StatePending {
			rec = e.complete(r.Key, res.Token, sp.state, fmt.Sprint(i))
		}
		out = append(out, rec)
		e.clk.Advance(tick)
	}
	return out
}

func (e *env) list(f journal.Filter) []journal.Record {
	e.t.Helper()
	var out []journal.Record
	for r, err := range e.s.List(e.ctx, f) {
		if err != nil {
			e.t.Fatalf("List(%+v) error: %v", f, err)
		}
		out = append(out, r)
	}
	return out
}

func testList(e *env) {
	all := e.listFixture()
	idx := func(rs []journal.Record) []int {
		var out []int
		for _, r := range rs {
			for i, a := range all {
				if a.Key == r.Key {
					out = append(out, i)
				}
			}
		}
		return out
	}
	t0 := all[0].Created
	cases := []struct {
		f    journal.Filter
		want []int // indexes into all, newest first
	}{
		{journal.Filter{}, []int{7, 6, 5, 4, 3, 2, 1, 0}},
		{journal.Filter{Tenant: "acme"}, []int{6, 5, 3, 2, 1, 0}},
		{journal.Filter{Tenant: "globex"}, []int{7, 4}},
		{journal.Filter{Session: "s1"}, []int{6, 4, 2, 1, 0}},
		{journal.Filter{Tenant: "acme", Session: "s1"}, []int{6, 2, 1, 0}},
		{journal.Filter{Session: "s1", Turn: "2"}, []int{6, 2}},
		{journal.Filter{Tenant: "acme", Session: "s1", Turn: "1"}, []int{1, 0}},
		{journal.Filter{Tool: "charge"}, []int{4, 3, 2, 0}},
		{journal.Filter{Tool: "refund", Tenant: "globex"}, []int{7}},
		{journal.Filter{State: journal.StateSucceeded}, []int{6, 4, 0}},
		{journal.Filter{State: journal.StatePending}, []int{7, 2}},
		{journal.Filter{State: journal.StateSuppressed}, []int{5}},
		{journal.Filter{Session: "s1", State: journal.StateSucceeded}, []int{6, 4, 0}},
		{journal.Filter{Tool: "charge", State: journal.StateSucceeded, Tenant: "acme"}, []int{0}},
		{journal.Filter{Since: t0.Add(2 * tick)}, []int{7, 6, 5, 4, 3, 2}},
		{journal.Filter{Until: t0.Add(2 * tick)}, []int{1, 0}},
		{journal.Filter{Since: t0.Add(2 * tick), Until: t0.Add(5 * tick)}, []int{4, 3, 2}},
		{journal.Filter{Tool: "charge", Since: t0.Add(tick), Until: t0.Add(4 * tick)}, []int{3, 2}},
		{journal.Filter{Limit: 3}, []int{7, 6, 5}},
		{journal.Filter{Session: "s1", Limit: 2}, []int{6, 4}},
		{journal.Filter{State: journal.StatePending, Limit: 1}, []int{7}},
		{journal.Filter{Tool: "nope"}, nil},
		{journal.Filter{Session: "s1", Turn: "9"}, nil},
	}
	for _, tc := range cases {
		got := idx(e.list(tc.f))
		if !reflect.DeepEqual(got, tc.want) {
			e.t.Errorf("List(%+v) = records %v; want %v", tc.f, got, tc.want)
		}
	}
	for _, r := range e.list(journal.Filter{Tenant: "acme", Session: "s2"}) {
		i := idx([]journal.Record{r})[0]
		e.same(fmt.Sprintf("List record %d", i), r, all[i])
	}
	// Breaking out of the loop early is fine.
	for range e.s.List(e.ctx, journal.Filter{}) {
		break
	}
}

func testStats(e *env) {
	st, err := e.s.Stats(e.ctx)
	if err != nil || st.Records != 0 {
		e.t.Fatalf("Stats() of an empty store = %+v, %v; want 0 records", st, err)
	}
	all := e.listFixture()
	// One more attempt on the pending record 2.
	if err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: all[2].Key, Token: all[2].Lease.Token, ID: "att-2", LeaseTTL: time.Hour, Durable: true}); err != nil {
		e.t.Fatalf("StartAttempt: %v", err)
	}
	st, err = e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("Stats() error: %v", err)
	}
	wantState := map[journal.State]int{journal.StateSucceeded: 3, journal.StateFailed: 1, journal.StatePending: 2, journal.StateUnknown: 1, journal.StateSuppressed: 1}
	wantTool := map[string]int{"charge": 4, "refund": 2, "email": 2}
	for s, n := range wantState {
		if st.ByState[s] != n {
			e.t.Errorf("Stats().ByState[%s] = %d; want %d", s, st.ByState[s], n)
		}
	}
	for tool, n := range wantTool {
		if st.ByTool[tool] != n {
			e.t.Errorf("Stats().ByTool[%s] = %d; want %d", tool, st.ByTool[tool], n)
		}
	}
	if st.Records != 8 || st.Attempts != 9 || st.Expired != 0 {
		e.t.Errorf("Stats() = %d records, %d attempts, %d expired; want 8, 9, 0", st.Records, st.Attempts, st.Expired)
	}
	if !st.Oldest.Equal(all[0].Created) || !st.Newest.Equal(all[7].Created) {
		e.t.Errorf("Stats() oldest, newest = %v, %v; want %v, %v", st.Oldest, st.Newest, all[0].Created, all[7].Created)
	}
	e.clk.Advance(journal.DefaultTTL + 2*time.Hour)
	st, err = e.s.Stats(e.ctx)
	if err != nil || st.Expired != 5 || st.OverdueUnknown != 3 {
		e.t.Errorf("Stats() after the TTL: Expired = %d, OverdueUnknown = %d, %v; want 5 (the known outcomes), 3 (unknown, pending)",
			st.Expired, st.OverdueUnknown, err)
	}
}

func testImport(e *env) {
	t0 := e.clk.Now().Add(-time.Hour)
	rec := journal.Record{
		Version:     journal.SchemaVersion,
		Key:         uuid.New(),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s9", Turn: "4", Tool: "charge", Discriminator: "seq-2"},
		Fingerprint: fp(7),
		Effect:      journal.Unkeyed,
		Input:       []byte(`{"a":1}`),
		State:       journal.StateUnknown,
		ErrorClass:  "maybe-executed",
		Attempts: []journal.Attempt{
			{ID: "a1", Start: t0, End: t0.Add(time.Second), Class: "retryable", Error: "503"},
			{ID: "a2", Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Class: "maybe-executed", Error: "timeout"},
		},
		Lease:   journal.Lease{Owner: "host-1", Token: 7, Expires: t0.Add(3 * time.Second)},
		Created: t0, Updated: t0.Add(3 * time.Second), Expires: t0.Add(journal.DefaultTTL),
	}
	if err := e.s.Import(e.ctx, rec); err != nil {
		e.t.Fatalf("Import() error: %v", err)
	}
	e.same("Get after Import", e.get(rec.Key), rec)
	if err := e.s.Import(e.ctx, rec); err != nil {
		e.t.Fatalf("Import() of the identical record error: %v; want nil", err)
	}
	diff := rec
	diff.ErrorMessage = "changed"
	e.wantErr("Import() of a different record", e.s.Import(e.ctx, diff), journal.ErrExists)
	e.same("Get after refused Import", e.get(rec.Key), rec)

	// An imported record behaves like any other.
	req := e.req()
	req.Key, req.Intent, req.Fingerprint = rec.Key, rec.Intent, rec.Fingerprint
	e.begin(req, journal.Answered)
	resolved := rec
	resolved.Version = 0
	if _, err := e.s.Resolve(e.ctx, rec.Key, journal.Resolution{State: journal.StateFailed, Reason: "never happened"}); err != nil {
		e.t.Fatalf("Resolve of an imported record: %v", err)
	}

	newer := rec
	newer.Key, newer.Version = uuid.New(), journal.SchemaVersion+1
	e.wantErr("Import() of a newer record", e.s.Import(e.ctx, newer), journal.ErrNewerVersion)
	_, err := e.s.Get(e.ctx, newer.Key)
	e.wantErr("Get after refused Import", err, journal.ErrNotFound)
}

func testNotFound(e *env) {
	_, err := e.s.Get(e.ctx, uuid.New())
	e.wantErr("Get of an unknown key", err, journal.ErrNotFound)
}

func testInvalid(e *env) {
	req := e.req()
	req.Key = uuid.Nil
	_, err := e.s.Begin(e.ctx, req)
	e.wantErr("Begin with a zero key", err, journal.ErrInvalid)
	good := e.req()
	res := e.begin(good, journal.Started)
	for _, st := range []journal.State{0, journal.StatePending, 99} {
		_, err := e.s.Complete(e.ctx, journal.Completion{Key: good.Key, Token: res.Token, State: st})
		e.wantErr(fmt.Sprintf("Complete to state %s", st), err, journal.ErrInvalid)
	}
	e.same("Get after invalid Completes", e.get(good.Key), res.Record)
}

func testClosed(e *env) {
	req := e.req()
	res := e.begin(req, journal.Started)
	if err := e.s.Close(); err != nil {
		e.t.Fatalf("Close() error: %v", err)
	}
	calls := map[string]error{}
	_, calls["Begin"] = e.s.Begin(e.ctx, e.req())
	calls["StartAttempt"] = e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "x"})
	_, calls["Renew"] = e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: res.Token})
	_, calls["Complete"] = e.s.Complete(e.ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded})
	_, calls["Resolve"] = e.s.Resolve(e.ctx, req.Key, journal.Resolution{State: journal.StateFailed})
	_, calls["Get"] = e.s.Get(e.ctx, req.Key)
	for _, err := range e.s.List(e.ctx, journal.Filter{}) {
		calls["List"] = err
		break
	}
	_, calls["GC"] = e.s.GC(e.ctx, journal.GCOptions{})
	_, calls["Stats"] = e.s.Stats(e.ctx)
	calls["Import"] = e.s.Import(e.ctx, res.Record)
	calls["Close"] = e.s.Close()
	for name, err := range calls {
		e.wantErr(name+" after Close", err, journal.ErrClosed)
	}
}

func testNonDurable(e *env) {
	req := e.req()
	req.Durable = false
	res := e.begin(req, journal.Started)
	e.same("Get of a non-durable begin", e.get(req.Key), res.Record)
	other := req
	other.Owner = "owner-b"
	e.begin(other, journal.Held)
	mis := req
	mis.Fingerprint = fp(3)
	mis.Intent.Turn = "9"          // its suppression guards turn 9, out of the way
	e.begin(mis, journal.Mismatch) // and is recorded under a key of its own
	if got := e.list(journal.Filter{Session: "s1", State: journal.StatePending}); len(got) != 1 || got[0].Key != req.Key {
		e.t.Fatalf("List(session s1, pending) after a non-durable begin = %d records; want it", len(got))
	}
	if got := e.list(journal.Filter{State: journal.StatePending}); len(got) != 1 {
		e.t.Fatalf("List(pending) after a non-durable begin = %d records; want 1", len(got))
	}
	if st, err := e.s.Stats(e.ctx); err != nil || st.Records != 2 || st.ByState[journal.StatePending] != 1 || st.ByState[journal.StateSuppressed] != 1 {
		e.t.Fatalf("Stats() after a non-durable begin and a mismatch = %+v, %v; want 1 pending, 1 suppressed", st, err)
	}
	if err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "att-2", LeaseTTL: leaseTTL}); err != nil {
		e.t.Fatalf("StartAttempt: %v", err)
	}
	if got := e.get(req.Key); len(got.Attempts) != 2 {
		e.t.Fatalf("Get after a non-durable StartAttempt: %d attempts; want 2", len(got.Attempts))
	}
	// Takeover of a non-durable record.
	e.clk.Advance(leaseTTL)
	tk := e.begin(other, journal.TakenOver)
	_, err := e.s.Complete(e.ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded})
	e.wantErr("Complete by the owner taken over", err, journal.ErrFenced)
	done := e.complete(req.Key, tk.Token, journal.StateSucceeded, "ok")
	e.same("Get after Complete", e.get(req.Key), done)
	e.begin(req, journal.Answered)

	// A durable begin of a key right after a non-durable one of another,
	// and a non-durable restart of an expired record.
	r2 := e.req()
	r2.Intent.Turn = "2"
	r2.RecordTTL = time.Hour
	res2 := e.begin(r2, journal.Started)
	e.complete(r2.Key, res2.Token, journal.StateSucceeded, "old")
	e.clk.Advance(2 * time.Hour)
	r2.Durable = false
	res3 := e.begin(r2, journal.Started)
	if res3.Token <= res2.Token {
		e.t.Fatalf("non-durable restart: token %d; want > %d", res3.Token, res2.Token)
	}
	if got := e.list(journal.Filter{Session: "s1", Turn: "2"}); len(got) != 1 || got[0].State != journal.StatePending {
		e.t.Fatalf("List(s1, turn 2) after a non-durable restart = %+v; want the pending record only", got)
	}
	e.complete(r2.Key, res3.Token, journal.StateFailed, "new")
	if got := e.list(journal.Filter{Session: "s1", Turn: "2"}); len(got) != 1 || got[0].State != journal.StateFailed {
		e.t.Fatalf("List(s1, turn 2) after Complete = %+v; want the failed record only", got)
	}
}

func testBeginRetake(e *env) {
	req := e.req()
	first := e.begin(req, journal.Started)
	e.clk.Advance(tick)
	unknown := e.complete(req.Key, first.Token, journal.StateUnknown, "timeout after send")
	now := e.clk.Advance(time.Minute)

	var asked []journal.State
	no := req
	no.Owner = "owner-b"
	no.Retake = func(r *journal.Record) bool { asked = append(asked, r.State); return false }
	got := e.begin(no, journal.Answered)
	e.same("Begin with Retake false", got.Record, unknown)
	if len(asked) == 0 || asked[0] != journal.StateUnknown {
		e.t.Fatalf("Retake asked about %v; want the unknown record", asked)
	}

	yes := no
	yes.Durable = false // the retake must still be seen by every later call
	yes.Retake = func(r *journal.Record) bool {
		r.State = journal.StateFailed // a callback cannot change the record
		return true
	}
	got = e.begin(yes, journal.TakenOver)
	if got.Token <= unknown.Lease.Token {
		e.t.Fatalf("Retake: token %d; want > %d", got.Token, unknown.Lease.Token)
	}
	want := unknown
	want.State = journal.StatePending
	want.ErrorClass, want.ErrorMessage = "", ""
	want.Lease = journal.Lease{Owner: "owner-b", Token: got.Token, Expires: now.Add(leaseTTL)}
	want.Updated = now
	want.Expires = got.Record.Expires
	e.same("Retake record", got.Record, want)
	e.same("Get after Retake", e.get(req.Key), want)
	if !want.Expires.After(unknown.Created) {
		e.t.Fatalf("Retake: Expires %v", want.Expires)
	}
	// Live again: others wait, the retaker completes.
	e.begin(req, journal.Held)
	if err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: got.Token, ID: "att-2", LeaseTTL: leaseTTL, Durable: true}); err != nil {
		e.t.Fatalf("StartAttempt after Retake: %v", err)
	}
	done := e.complete(req.Key, got.Token, journal.StateSucceeded, "second try")
	if len(done.Attempts) != 2 || done.State != journal.StateSucceeded {
		e.t.Fatalf("Complete after Retake = %d attempts, %s; want 2, succeeded", len(done.Attempts), done.State)
	}
	// Retake is never asked about another payload.
	mis := no
	mis.Fingerprint = fp(5)
	mis.Retake = func(*journal.Record) bool { return true }
	e.begin(mis, journal.Mismatch)
	e.same("Get after Mismatch with Retake", e.get(req.Key), done)
}

// charge is a durable request of tool charge in (acme, s1, turn 7) for an
// amount, whose fingerprint is the amount.
func (e *env) charge(amount byte) journal.BeginRequest {
	r := e.req()
	r.Intent.Turn = "7"
	r.Fingerprint = fp(amount)
	r.Input = []byte(fmt.Sprintf(`{"amount":%d}`, amount))
	return r
}

// suppress records a suppression of r's intent under r's key.
func (e *env) suppress(r journal.BeginRequest, class string) journal.Record {
	e.t.Helper()
	res := e.begin(r, journal.Started)
	done, err := e.s.Complete(e.ctx, journal.Completion{Key: r.Key, Token: res.Token, State: journal.StateSuppressed,
		ErrorClass: class, ErrorMessage: "suppressed by the test"})
	if err != nil {
		e.t.Fatalf("Complete(%s, suppressed) error: %v", r.Key, err)
	}
	return done
}

// testGuardRetake: a retake would run the tool again, so the guard is
// consulted as for a new record.
func testGuardRetake(e *env) {
	c50 := e.charge(50)
	res := e.begin(c50, journal.Started)
	failed, err := e.s.Complete(e.ctx, journal.Completion{Key: c50.Key, Token: res.Token, State: journal.StateFailed,
		ErrorClass: "not-executed", ErrorMessage: "connection refused"})
	if err != nil {
		e.t.Fatalf("Complete(charge 50, failed) error: %v", err)
	}
	sup := e.suppress(e.charge(49), "mismatch")
	e.clk.Advance(tick)

	again := c50
	again.Owner, again.AttemptID = "owner-b", "att-b"
	asked := 0
	again.Retake = func(r *journal.Record) bool {
		asked++
		return r.State == journal.StateFailed && r.ErrorClass == "not-executed"
	}
	got := e.begin(again, journal.Guarded)
	e.same("Guarded retake: the suppressing record", got.Record, sup)
	e.same("Get after a guarded retake (nothing written)", e.get(c50.Key), failed)
	if asked == 0 {
		e.t.Fatalf("Retake was not asked; want the guard consulted because the retake would run the tool")
	}
	// Without the guard the retake goes ahead.
	again.Guard = journal.GuardOff
	e.begin(again, journal.TakenOver)
}

// testGuardMismatch: a mismatch is a suppression, and arms the guard for
// the rest of the turn.
func testGuardMismatch(e *env) {
	k := e.charge(1)
	res := e.begin(k, journal.Started)
	done := e.complete(k.Key, res.Token, journal.StateSucceeded, "charged")
	alt := k
	alt.Fingerprint, alt.Owner, alt.Input = fp(2), "owner-b", []byte(`{"amount":2}`)
	got := e.begin(alt, journal.Mismatch)
	e.same("Mismatch record", got.Record, done)
	e.same("Get after Mismatch", e.get(k.Key), done)

	// The model dodges the key: same input under another key, same turn.
	k2 := alt
	k2.Key = uuid.New()
	g := e.begin(k2, journal.Guarded)
	if g.Record.State != journal.StateSuppressed || g.Record.Fingerprint != fp(2) || g.Record.Intent != alt.Intent ||
		g.Record.ErrorClass != "mismatch" || g.Record.Key != mismatchKey(k.Key, fp(2)) {
		e.t.Fatalf("Guarded by %+v; want the suppressed mismatch of fingerprint %s under MismatchKey", g.Record, fp(2))
	}
	if _, err := e.s.Get(e.ctx, k2.Key); !errors.Is(err, journal.ErrNotFound) {
		e.t.Fatalf("Get(%s) after Guarded error = %v; want ErrNotFound", k2.Key, err)
	}
	// A repeated mismatch finds the suppression it recorded: one record.
	e.clk.Advance(tick)
	e.begin(alt, journal.Mismatch)
	sups := e.list(journal.Filter{Session: "s1", State: journal.StateSuppressed})
	if len(sups) != 1 {
		e.t.Fatalf("List(suppressed) after two mismatches = %d records; want 1", len(sups))
	}
	e.same("the mismatch's suppression", sups[0], g.Record)
	// Another turn is not guarded.
	other := k2
	other.Intent.Turn = "8"
	e.begin(other, journal.Started)
}

// testGuardTakeover: taking over an abandoned intent may run the tool, so
// a suppression recorded meanwhile in the turn blocks it.
func testGuardTakeover(e *env) {
	k := e.charge(50)
	first := e.begin(k, journal.Started)
	e.clk.Advance(leaseTTL)
	sup := e.suppress(e.charge(49), "conflict")
	b := k
	b.Owner = "owner-b"
	got := e.begin(b, journal.Guarded)
	e.same("Guarded takeover: the suppressing record", got.Record, sup)
	e.same("Get after a guarded takeover (nothing written)", e.get(k.Key), first.Record)
}

// testRenew: the owner renews its lease while its attempt runs; a renewal
// is fenced like every owner's write.
func testRenew(e *env) {
	for _, durable := range []bool{true, false} {
		req := e.req()
		req.Durable = durable
		req.Intent.Turn = fmt.Sprint("renew-", durable)
		res := e.begin(req, journal.Started)
		now := e.clk.Advance(leaseTTL - time.Second)
		exp, err := e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: res.Token, LeaseTTL: leaseTTL})
		if err != nil || !exp.Equal(now.Add(leaseTTL)) {
			e.t.Fatalf("Renew(durable begin %v) = %v, %v; want %v", durable, exp, err, now.Add(leaseTTL))
		}
		want := res.Record
		want.Lease.Expires = exp
		e.same("Get after Renew", e.get(req.Key), want)

		// Past the first lease, within the renewed one: still held.
		e.clk.Advance(leaseTTL - time.Second)
		other := req
		other.Owner = "owner-b"
		e.begin(other, journal.Held)
		_, err = e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: res.Token + 1})
		e.wantErr("Renew with a wrong token", err, journal.ErrFenced)
		e.same("Get after a fenced Renew", e.get(req.Key), want)

		// Once taken over, the old owner's renewal is fenced.
		e.clk.Advance(time.Second)
		tk := e.begin(other, journal.TakenOver)
		_, err = e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: res.Token, LeaseTTL: time.Hour})
		e.wantErr("Renew by the owner taken over", err, journal.ErrFenced)
		e.same("Get after a fenced Renew", e.get(req.Key), tk.Record)
		exp, err = e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: tk.Token}) // default lease
		if err != nil || !exp.Equal(e.clk.Now().Add(journal.DefaultLeaseTTL)) {
			e.t.Fatalf("Renew(new owner, default lease) = %v, %v; want %v", exp, err, e.clk.Now().Add(journal.DefaultLeaseTTL))
		}
		done := e.complete(req.Key, tk.Token, journal.StateSucceeded, "ok")
		_, err = e.s.Renew(e.ctx, journal.RenewRequest{Key: req.Key, Token: tk.Token})
		e.wantErr("Renew of a settled record", err, journal.ErrFenced)
		e.same("Get after Renew of a settled record", e.get(req.Key), done)
	}
	_, err := e.s.Renew(e.ctx, journal.RenewRequest{Key: uuid.New(), Token: 1})
	e.wantErr("Renew of an unknown key", err, journal.ErrNotFound)
	_, err = e.s.Renew(e.ctx, journal.RenewRequest{Token: 1})
	e.wantErr("Renew of the zero key", err, journal.ErrInvalid)
}

// testSettle: an attempt whose downstream may still be acting keeps its
// intent Held after the lease expired, until its QuietAt.
func testSettle(e *env) {
	req := e.req()
	req.Settle = 3 * leaseTTL
	start := e.clk.Now()
	res := e.begin(req, journal.Started)
	if q := res.Record.Attempts[0].QuietAt; !q.Equal(start.Add(3 * leaseTTL)) {
		e.t.Fatalf("Begin(Settle %v): attempt QuietAt = %v; want %v", req.Settle, q, start.Add(3*leaseTTL))
	}
	e.same("Get after Begin with Settle", e.get(req.Key), res.Record)
	other := req
	other.Owner = "owner-b"
	e.clk.Advance(leaseTTL) // the lease is over, the attempt may not be
	e.begin(other, journal.Held)
	e.clk.Advance(2*leaseTTL - tick)
	e.begin(other, journal.Held)
	e.clk.Advance(tick)
	tk := e.begin(other, journal.TakenOver)

	// A new attempt carries its own settle time.
	t1 := e.clk.Advance(time.Second)
	err := e.s.StartAttempt(e.ctx, journal.AttemptRequest{Key: req.Key, Token: tk.Token, ID: "att-2",
		PrevClass: "unknown", LeaseTTL: leaseTTL, Settle: 2 * leaseTTL, Durable: true})
	if err != nil {
		e.t.Fatalf("StartAttempt(Settle): %v", err)
	}
	got := e.get(req.Key)
	if q := got.Attempts[1].QuietAt; !q.Equal(t1.Add(2 * leaseTTL)) {
		e.t.Fatalf("StartAttempt(Settle %v): attempt QuietAt = %v; want %v", 2*leaseTTL, q, t1.Add(2*leaseTTL))
	}
	third := req
	third.Owner = "owner-c"
	e.clk.Advance(leaseTTL)
	e.begin(third, journal.Held)
	e.clk.Advance(leaseTTL)
	e.begin(third, journal.TakenOver)

	// Without Settle, an expired lease is taken over at once.
	plain := e.req()
	plain.Intent.Turn = "2"
	e.begin(plain, journal.Started)
	if q := e.get(plain.Key).Attempts[0].QuietAt; !q.IsZero() {
		e.t.Fatalf("Begin without Settle: QuietAt = %v; want zero", q)
	}
	e.clk.Advance(leaseTTL)
	plain.Owner = "owner-b"
	e.begin(plain, journal.TakenOver)
}

// testMismatchRace: goroutines answer mismatches of keys whose
// suppressions land crosswise (key a's under a key that sorts with b, b's
// with a: on bbolt, in each other's lock stripe) at once: no deadlock, and
// one suppression per key and payload.
func testMismatchRace(e *env) {
	const pairs, rounds = 4, 50
	alt := fp(100)
	var reqs []journal.BeginRequest
	for range pairs {
		a, b := e.req(), e.req()
		for mismatchKey(a.Key, alt)[0] == a.Key[0] {
			a.Key = uuid.New() // its suppression must land in another stripe
		}
		for b.Key[0] == a.Key[0] || mismatchKey(b.Key, alt)[0] != a.Key[0] {
			b.Key = uuid.New()
			b.Key[0] = mismatchKey(a.Key, alt)[0]
		}
		for _, r := range []journal.BeginRequest{a, b} {
			r.Intent.Discriminator = r.Key.String()
			res := e.begin(r, journal.Started)
			e.complete(r.Key, res.Token, journal.StateSucceeded, "ok")
			reqs = append(reqs, r)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(reqs))
	for i, r := range reqs {
		r.Fingerprint, r.Owner = alt, fmt.Sprint("racer-", i)
		wg.Go(func() {
			for range rounds {
				res, err := e.s.Begin(e.ctx, r)
				if err == nil && res.Outcome != journal.Mismatch {
					err = fmt.Errorf("Begin(%s, another payload) = %s; want Mismatch", r.Key, outcomeName(res.Outcome))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	if got := e.list(journal.Filter{State: journal.StateSuppressed}); len(got) != len(reqs) {
		e.t.Fatalf("List(suppressed) after the race = %d records; want %d, one per key", len(got), len(reqs))
	}
	for _, r := range reqs {
		if got := e.get(mismatchKey(r.Key, alt)); got.State != journal.StateSuppressed {
			e.t.Fatalf("Get(MismatchKey(%s)) = %s; want suppressed", r.Key, got.State)
		}
	}
}

// testImportRefusesImpossible: Import refuses, with ErrInvalid, every record
// the state machine could not have produced, and writes nothing.
func testImportRefusesImpossible(e *env) {
	t0 := e.clk.Now().Add(-time.Hour)
	good := func() journal.Record {
		return journal.Record{
			Version: journal.SchemaVersion, Key: uuid.New(),
			Intent: keyderive.Intent{Tenant: "acme", Session: "s8", Turn: "1", Tool: "charge"},
			State:  journal.StateSucceeded, Output: []byte(`{"ok":true}`),
			Attempts: []journal.Attempt{{ID: "a1", Start: t0, End: t0.Add(time.Second)}},
			Lease:    journal.Lease{Owner: "host-1", Token: 1, Expires: t0.Add(time.Second)},
			Created:  t0, Updated: t0.Add(time.Second), Expires: t0.Add(journal.DefaultTTL),
		}
	}
	if r := good(); e.s.Import(e.ctx, r) != nil {
		e.t.Fatalf("Import of a possible record: %v", e.s.Import(e.ctx, r))
	}
	tests := []struct {
		name string
		bad  func(r *journal.Record)
	}{
		{"succeeded with no attempt", func(r *journal.Record) { r.Attempts = nil }},
		{"a lease to year 9999", func(r *journal.Record) {
			r.State, r.Output = journal.StatePending, nil
			r.Attempts[0].End = time.Time{}
			r.Lease.Expires = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}},
		{"an attempt that ends before it starts", func(r *journal.Record) { r.Attempts[0].End = t0.Add(-time.Second) }},
		{"a zero expiry", func(r *journal.Record) { r.Expires = time.Time{} }},
		{"token 2^64-1", func(r *journal.Record) { r.Lease.Token = 1<<64 - 1 }},
		{"token 0", func(r *journal.Record) { r.Lease.Token = 0 }},
		{"a resolution on a pending record", func(r *journal.Record) {
			r.State, r.Output = journal.StatePending, nil
			r.Attempts[0].End = time.Time{}
			r.Resolution = &journal.Resolution{State: journal.StateSucceeded, At: t0.Add(time.Second)}
		}},
		{"a settled record with a live lease", func(r *journal.Record) { r.Lease.Expires = t0.Add(time.Hour) }},
		{"an attempt before the record", func(r *journal.Record) { r.Attempts[0].Start = t0.Add(-time.Minute) }},
		{"an open attempt in a settled record", func(r *journal.Record) { r.Attempts[0].End = time.Time{} }},
		{"updated before created", func(r *journal.Record) { r.Updated = t0.Add(-time.Second) }},
		{"quiet before it starts", func(r *journal.Record) { r.Attempts[0].QuietAt = t0.Add(-time.Second) }},
		{"a failure with an output", func(r *journal.Record) { r.State, r.ErrorClass = journal.StateFailed, "terminal" }},
		{"an unknown effect kind", func(r *journal.Record) { r.Effect = 200 }},
	}
	for _, tt := range tests {
		r := good()
		tt.bad(&r)
		err := e.s.Import(e.ctx, r)
		if !errors.Is(err, journal.ErrInvalid) {
			e.t.Errorf("Import(%s) = %v; want ErrInvalid", tt.name, err)
			continue
		}
		if _, err := e.s.Get(e.ctx, r.Key); !errors.Is(err, journal.ErrNotFound) {
			e.t.Errorf("Get after the refused Import(%s) = %v; want ErrNotFound (nothing written)", tt.name, err)
		}
	}
}

// mismatchKey is the key under which a store records the suppression of a
// Begin that answered Mismatch for key with fingerprint fp, as
// journal.Mismatch specifies it: the UUIDv5 of fp in the namespace key.
func mismatchKey(key uuid.UUID, fp keyderive.Fingerprint) uuid.UUID {
	return uuid.NewSHA1(key, fp[:])
}
