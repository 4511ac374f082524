package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// awaiting is an intent recorded as awaiting approval.
type awaiting struct {
	key uuid.UUID
	fp  keyderive.Fingerprint
}

// beginAwaiting records an intent of tool that needs need approvals
// within ttl of the store's clock.
func beginAwaiting(t *testing.T, s journal.Store, tool, input string, need int, ttl time.Duration) awaiting {
	t.Helper()
	in := keyderive.Intent{Tenant: "acme", Session: "s-approve", Turn: "1", Tool: tool}
	d, err := (&keyderive.Deriver{Namespace: s.Namespace()}).Derive(in, []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Begin(context.Background(), journal.BeginRequest{Key: d.Key, Intent: in, Fingerprint: d.Fingerprint,
		Effect: journal.Unkeyed, Input: d.Canonical, Owner: "agent-1", Durable: true, Approvals: need, ApprovalTTL: ttl})
	if err != nil || res.Outcome != journal.Held {
		t.Fatalf("Begin(%s) with approvals = %v, %v; want Held", tool, res.Outcome, err)
	}
	return awaiting{d.Key, d.Fingerprint}
}

// TestApproveReject approves and rejects on every store: a bbolt file, a
// bbolt journal held by a running process (through its socket), PostgreSQL
// and Redis. A forged or repeated approval is refused and records nothing;
// the record keeps every decision with who, when, why and the input.
func TestApproveReject(t *testing.T) {
	clock := &journal.Options{Now: func() time.Time { return testNow }}
	t.Run("bolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.db")
		s, err := bolt.Open(path, &bolt.Options{Journal: *clock})
		if err != nil {
			t.Fatal(err)
		}
		refund, wire := beginAwaiting(t, s, "refund", `{"amount":900}`, 2, time.Hour), beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, time.Hour)
		s.Close()
		approveReject(t, path, refund, wire)
		// Approved: the next Begin takes it over, once, with nothing run.
		s, err = bolt.Open(path, &bolt.Options{Journal: *clock})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rec, _ := s.Get(context.Background(), refund.key)
		req := journal.BeginRequest{Key: refund.key, Intent: rec.Intent, Fingerprint: refund.fp, Effect: journal.Unkeyed, Owner: "agent-2", Durable: true}
		for i, want := range []journal.BeginOutcome{journal.TakenOver, journal.Held} {
			if res, err := s.Begin(context.Background(), req); err != nil || res.Outcome != want {
				t.Errorf("Begin %d after the approvals = %v, %v; want %v", i+1, res.Outcome, err, want)
			}
		}
	})
	t.Run("bolt-running", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.db")
		s, err := bolt.Open(path, &bolt.Options{Journal: *clock})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		refund, wire := beginAwaiting(t, s, "refund", `{"amount":900}`, 2, time.Hour), beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, time.Hour)
		srv, err := inspect.Listen(inspect.SocketPath(path), s, &inspect.ServerOptions{Journal: path, Owner: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		approveReject(t, path, refund, wire)
	})
	t.Run("postgres", func(t *testing.T) {
		loc := pgJournal(t)
		s, err := openAt(context.Background(), loc, clock, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		func() {
			// Until journal/postgres stores approvals its Begin panics on
			// one; the test runs once it does.
			defer func() {
				if p := recover(); p != nil {
					t.Skipf("journal/postgres does not store approvals yet: %v", p)
				}
			}()
			beginAwaiting(t, s, "probe", `{}`, 1, time.Hour)
		}()
		approveReject(t, loc, beginAwaiting(t, s, "refund", `{"amount":900}`, 2, time.Hour), beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, time.Hour))
	})
	t.Run("redis", func(t *testing.T) {
		loc := redisJournal(t)
		s, err := openAt(context.Background(), loc, clock, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		approveReject(t, loc, beginAwaiting(t, s, "refund", `{"amount":900}`, 2, time.Hour), beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, time.Hour))
	})
}

// approveReject runs the decisions on the journal at loc: refund needs two
// approvals, wire one.
func approveReject(t *testing.T, loc string, refund, wire awaiting) {
	key, wireKey := refund.key.String(), wire.key.String()
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approve", key, "--fingerprint", wire.fp.String(), "--by", "eve"}, exitConflict, "has input " + refund.fp.String() + ", not " + wire.fp.String()},
		{[]string{"approve", key, "--fingerprint", refund.fp.String()[:12], "--by", "eve"}, exitUsage, "want the 64 hex digits"},
		{[]string{"approve", key, "--by", "eve"}, exitUsage, "approve needs --fingerprint"},
		{[]string{"approve", key, "--fingerprint", refund.fp.String(), "--by", "ann", "--reason", "customer called"}, 0, "(1 of 2)"},
		{[]string{"approve", key, "--fingerprint", refund.fp.String(), "--by", "ann"}, exitConflict, `already approved by "ann"; it needs 2 distinct approvers`},
		{[]string{"approve", key, "--fingerprint", refund.fp.String(), "--reason", "checked the ticket"}, 0, "runs the next time its call is made"},
		{[]string{"approve", key, "--fingerprint", refund.fp.String(), "--by", "carol"}, exitConflict, "already approved (2 of 2) (approved by ann, alice@host1)"},
		{[]string{"reject", key, "--reason", "too late", "--by", "carol"}, exitConflict, "already approved"},
		{[]string{"reject", wireKey, "--by", "dan"}, exitUsage, "reject needs --reason"},
		{[]string{"reject", wireKey, "--by", "dan", "--reason", "wrong account"}, 0, "rejected " + wireKey + " by dan"},
		{[]string{"approve", wireKey, "--fingerprint", wire.fp.String(), "--by", "ann"}, exitConflict, "is suppressed, not awaiting approval (rejected by dan: wrong account)"},
	}
	for _, st := range steps {
		r := agentctl(t, false, append(st.args, "--journal", loc)...)
		out := r.stdout
		if st.code != 0 {
			out = r.stderr
		}
		if r.code != st.code || !strings.Contains(out, st.want) {
			t.Errorf("%v = %d, %q, %q; want %d and %q", st.args, r.code, r.stdout, r.stderr, st.code, st.want)
		}
	}
	rec := getRecord(t, loc, key)
	g := rec.Approval.Given
	if rec.State != journal.StateAwaiting || len(g) != 2 || g[0].By != "ann" || g[0].Reason != "customer called" || g[0].Fingerprint != refund.fp ||
		!g[0].At.Equal(testNow) || g[1].By != "alice@host1" || g[1].Reason != "checked the ticket" {
		t.Errorf("refund after the decisions: %s, approvals %+v; want awaiting, ann's then alice@host1's", rec.State, g)
	}
	r := agentctl(t, false, "show", key, "--journal", loc)
	for _, want := range []string{"approvals\t2 of 2\n", "approval_deadline\t2026-03-01T12:00:00Z (approved: it runs the next time its call is made)\n",
		"approved_by\tann at 2026-03-01T11:00:00Z for input " + refund.fp.String() + ": customer called\n", "approved_by\talice@host1 at "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show of the approved intent = %d, %q; want %q in it", r.code, r.stdout, want)
		}
	}
	r = agentctl(t, false, "show", wireKey, "--journal", loc)
	for _, want := range []string{"approvals\t0 of 1\n", "resolved_as\tsuppressed\n", "resolved_by\tdan\n", "resolved_reason\twrong account\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show of the rejected intent = %d, %q; want %q in it", r.code, r.stdout, want)
		}
	}
	rec = getRecord(t, loc, wireKey)
	if res := rec.Resolution; rec.State != journal.StateSuppressed || res == nil || res.By != "dan" || res.Reason != "wrong account" || len(rec.Approval.Given) != 0 {
		t.Errorf("wire after the rejection: %s, resolution %+v, approvals %+v; want suppressed by dan", rec.State, res, rec.Approval.Given)
	}
}

// TestApprovePastDeadline: an intent whose approval deadline passed cannot
// be approved, and the refusal records nothing.
func TestApprovePastDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return t0 }}})
	if err != nil {
		t.Fatal(err)
	}
	late := beginAwaiting(t, s, "refund", `{"amount":900}`, 1, time.Hour) // deadline t0+1h, before testNow
	s.Close()
	r := agentctl(t, false, "approve", late.key.String(), "--fingerprint", late.fp.String(), "--journal", path)
	if r.code != exitConflict || !strings.Contains(r.stderr, "its approval deadline 2026-03-01T10:00:00Z has passed") {
		t.Errorf("approve past the deadline = %d, %q; want %d", r.code, r.stderr, exitConflict)
	}
	if rec := getRecord(t, path, late.key.String()); len(rec.Approval.Given) != 0 {
		t.Errorf("approvals after the refusal: %+v; want none", rec.Approval.Given)
	}
}

// TestExportCarriesDecisions: export and import carry every decision (the
// approvals with their approver, time, reason and input; a rejection), the
// seal covers them, and an approval changed in the file is refused.
func TestExportCarriesDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	refund, wire := beginAwaiting(t, s, "refund", `{"amount":900}`, 2, time.Hour), beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, time.Hour)
	s.Close()
	for _, args := range [][]string{
		{"approve", refund.key.String(), "--fingerprint", refund.fp.String(), "--by", "ann", "--reason", "customer called"},
		{"reject", wire.key.String(), "--by", "dan", "--reason", "wrong account"},
	} {
		if r := agentctl(t, false, append(args, "--journal", path)...); r.code != 0 {
			t.Fatalf("%v = %d, %s", args, r.code, r.stderr)
		}
	}
	exp := exportOf(t, path)
	for _, want := range []string{`"approval":{"need":2,"deadline":"2026-03-01T12:00:00Z","given":[{"state":"pending"`, `"by":"ann"`, `"fingerprint":"` + refund.fp.String() + `"}]}`, `"reason":"wrong account","by":"dan"`} {
		if !strings.Contains(exp, want) {
			t.Errorf("the export does not hold %s:\n%s", want, exp)
		}
	}
	var j recordJSON
	if r := agentctl(t, false, "show", refund.key.String(), "--journal", path, "--json"); json.Unmarshal([]byte(r.stdout), &j) != nil || j.State != "awaiting" ||
		j.Approval == nil || j.Approval.Need != 2 || len(j.Approval.Given) != 1 || j.Approval.Given[0].By != "ann" || j.Approval.Given[0].Fingerprint != refund.fp.String() {
		t.Errorf("show --json of the approved intent = %q; want its approval as agentctl help json documents it", r.stdout)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if r := agentctl(t, false, "import", writeFile(t, exp), "--journal", copyPath, "--create"); r.code != 0 {
		t.Fatalf("import = %d, %s", r.code, r.stderr)
	}
	if again := exportOf(t, copyPath); again != exp {
		t.Errorf("the export of the imported journal differs:\n%s\n---\n%s", again, exp)
	}
	forged := strings.Replace(exp, `"by":"ann"`, `"by":"mallory"`, 1)
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if r := agentctl(t, false, "import", writeFile(t, forged), "--journal", fresh, "--create"); r.code != exitUsage || !strings.Contains(r.stderr, "does not match its seal") {
		t.Errorf("import of an export whose approver was changed = %d, %q; want %d, the seal refused", r.code, r.stderr, exitUsage)
	}
}

// TestTimelineShowsDecisions: the timeline marks every approval and a
// rejection (JSON, text and HTML), flags the intents that await a person,
// and says what a re-issue does now: wait for the approvers, run once
// approved.
func TestTimelineShowsDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return t0 }}})
	if err != nil {
		t.Fatal(err)
	}
	refund := beginAwaiting(t, s, "refund", `{"amount":900}`, 2, 3*time.Hour)
	wire := beginAwaiting(t, s, "wire", `{"to":"acct-9"}`, 1, 3*time.Hour)
	payout := beginAwaiting(t, s, "payout", `{"amount":50}`, 1, 3*time.Hour)
	s.Close()
	for _, args := range [][]string{
		{"approve", refund.key.String(), "--fingerprint", refund.fp.String(), "--by", "ann", "--reason", "customer called"},
		{"reject", wire.key.String(), "--by", "dan", "--reason", "wrong account"},
		{"approve", payout.key.String(), "--fingerprint", payout.fp.String(), "--by", "ann"},
	} {
		if r := agentctl(t, false, append(args, "--journal", path)...); r.code != 0 {
			t.Fatalf("%v = %d, %s", args, r.code, r.stderr)
		}
	}
	r := agentctl(t, false, "timeline", "--journal", path, "--session", "s-approve", "--json")
	var tl timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil || r.code != 0 {
		t.Fatalf("timeline --json = %d, %v, %s", r.code, err, r.stderr)
	}
	type row struct{ status, attention, reissue, reason, marks string }
	want := map[string]row{
		"refund": {"awaiting", "approval", actWait, "awaits approval (1 of 2 given) until 2026-03-01T12:00:00Z: agentctl approve " + refund.key.String() + " --fingerprint " + refund.fp.String(),
			"approve approved by ann (1 of 2) for input " + refund.fp.String() + ": customer called;"},
		"wire":   {"suppressed", "", actAnswer, "answered from the journal (suppressed", "reject rejected by dan: wrong account;"},
		"payout": {"awaiting", "approval", actRetry, "runs once when called: approved (1 of 1) (approved by ann)", "approve approved by ann (1 of 1) for input " + payout.fp.String() + ": -;"},
	}
	for _, in := range tl.Intents {
		var marks string
		for _, m := range in.Marks {
			marks += m.Kind + " " + m.Text + ";"
		}
		got, w := row{in.Status, in.Attention, in.Reissue, in.ReissueReason, marks}, want[in.Tool]
		if got.status != w.status || got.attention != w.attention || got.reissue != w.reissue || !strings.HasPrefix(got.reason, w.reason) || got.marks != w.marks {
			t.Errorf("timeline row %s = %+v; want %+v", in.Tool, got, w)
		}
	}
	if r := agentctl(t, true, "timeline", "--journal", path, "--session", "s-approve"); !strings.Contains(r.stdout, "A approved  X rejected\n") {
		t.Errorf("text timeline = %d, %q; want the approval glyphs in its legend", r.code, r.stdout)
	}
	page := filepath.Join(t.TempDir(), "t.html")
	agentctl(t, false, "timeline", "--journal", path, "--session", "s-approve", "--html", page)
	b, _ := os.ReadFile(page)
	for _, want := range []string{`<text class="mark approve"`, `<title>rejected by dan: wrong account</title>✗</text>`, `<span class="lg-approve"><span class="approve">✓</span> approved</span>`, `a-approval`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the HTML timeline has no %s", want)
		}
	}
}
