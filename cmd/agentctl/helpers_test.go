package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// t0 is when the fixture journal's first intent began; the commands run at
// testNow. Human output is in testZone, so goldens show the conversion.
var (
	t0       = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	testNow  = t0.Add(2 * time.Hour)
	testZone = time.FixedZone("CET", 3600)
	testNS   = uuid.MustParse("6ba7b812-9dad-11d1-80b4-00c04fd430c8")
)

// The PostgreSQL journals of the tests judge leases and TTLs at testNow,
// like the bbolt ones (a PostgreSQL store otherwise asks its server).
func init() { postgresTestClock = func() time.Time { return testNow } }

// testEnv returns an env writing to buffers, at testNow in testZone.
func testEnv(tty bool) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{
		stdin:     strings.NewReader(""),
		stdout:    &out,
		stderr:    &errb,
		getenv:    testGetenv,
		now:       func() time.Time { return testNow },
		loc:       testZone,
		stdoutTTY: tty,
		stderrTTY: tty,
		user:      func() string { return "alice@host1" },
	}, &out, &errb
}

// testGetenv is the tests' environment: the fixture's namespace, which
// import --create needs (an export does not carry it), and nothing else.
func testGetenv(k string) string {
	if k == namespaceEnv {
		return testNS.String()
	}
	return ""
}

// result is one agentctl invocation's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// agentctl runs one invocation in-process; tty chooses human output.
func agentctl(t *testing.T, tty bool, args ...string) result {
	t.Helper()
	e, out, errb := testEnv(tty)
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

// fixture is a journal with intents in every state the replay preview
// distinguishes, built through the real Store methods.
type fixture struct {
	path string
	keys map[string]uuid.UUID // by name
}

// fixture intents, in creation order (one minute apart from t0).
const (
	fxSearch    = "search"   // read-only, succeeded
	fxCharge    = "charge"   // unkeyed, pending, lease expired → block
	fxRefund    = "refund"   // keyed, pending, lease expired → retry
	fxEmail     = "email"    // unkeyed, unknown → block
	fxLookup    = "lookup"   // idempotent, failed not-executed → retry
	fxBook      = "book"     // keyed, failed terminal → answer
	fxTransfer  = "transfer" // unkeyed, suppressed → answer
	fxShip      = "ship"     // keyed, pending, live lease → wait
	fxOld       = "old"      // unkeyed, succeeded, expired → anew (session s2)
	fxBeta      = "beta"     // tenant beta, session s3, succeeded
	fxResolved  = "resolved" // unkeyed, unknown then resolved by an operator (s2)
	fxFPOnly    = "fponly"   // keyed, succeeded, fingerprint only (s2)
	fxRetaken   = "retaken"  // unkeyed, failed not-executed, retaken, owner died → retry (s2)
	fixtureSize = 13
)

type fxIntent struct {
	name, tenant, session, turn, tool string
	effect                            journal.Effect
	input                             string
	recordTTL                         time.Duration
	fpOnly                            bool
	// settle drives the record after Begin; token is Begin's.
	settle func(t *testing.T, s journal.Store, key uuid.UUID, token uint64, clock *time.Time)
}

func complete(state journal.State, output, class, msg string) func(*testing.T, journal.Store, uuid.UUID, uint64, *time.Time) {
	return func(t *testing.T, s journal.Store, key uuid.UUID, token uint64, clock *time.Time) {
		t.Helper()
		*clock = clock.Add(1500 * time.Millisecond)
		var out []byte
		if output != "" {
			out = []byte(output)
		}
		if _, err := s.Complete(context.Background(), journal.Completion{Key: key, Token: token, State: state, Output: out, ErrorClass: class, ErrorMessage: msg}); err != nil {
			t.Fatalf("Complete(%s): %v", key, err)
		}
	}
}

// retryThen records a failed first attempt, then completes.
func retryThen(class, msg string, then func(*testing.T, journal.Store, uuid.UUID, uint64, *time.Time)) func(*testing.T, journal.Store, uuid.UUID, uint64, *time.Time) {
	return func(t *testing.T, s journal.Store, key uuid.UUID, token uint64, clock *time.Time) {
		t.Helper()
		*clock = clock.Add(time.Second)
		if err := s.StartAttempt(context.Background(), journal.AttemptRequest{Key: key, Token: token, ID: "att-" + key.String()[:4] + "-2", PrevClass: class, PrevError: msg, LeaseTTL: 30 * time.Second, Durable: true}); err != nil {
			t.Fatalf("StartAttempt(%s): %v", key, err)
		}
		then(t, s, key, token, clock)
	}
}

var fixtureIntents = []fxIntent{
	{name: fxSearch, tenant: "acme", session: "s1", turn: "1", tool: "search", effect: journal.ReadOnly,
		input: `{"q":"flights to Lisbon"}`, settle: complete(journal.StateSucceeded, `{"hits":3}`, "", "")},
	{name: fxCharge, tenant: "acme", session: "s1", turn: "1", tool: "charge", effect: journal.Unkeyed,
		input: `{"amount":"49.00","currency":"USD","customer":8812}`},
	{name: fxRefund, tenant: "acme", session: "s1", turn: "2", tool: "refund", effect: journal.Keyed,
		input: `{"charge":"ch_1"}`},
	{name: fxEmail, tenant: "acme", session: "s1", turn: "2", tool: "email", effect: journal.Unkeyed,
		input: `{"to":"a@example.com"}`, settle: complete(journal.StateUnknown, "", "maybe-executed", "read: connection reset by peer")},
	{name: fxLookup, tenant: "acme", session: "s1", turn: "3", tool: "lookup", effect: journal.Idempotent,
		input: `{"id":7}`, settle: retryThen("not-executed", "dial tcp: connection refused", complete(journal.StateFailed, "", "not-executed", "dial tcp: connection refused"))},
	{name: fxBook, tenant: "acme", session: "s1", turn: "3", tool: "book", effect: journal.Keyed,
		input: `{"flight":"TP123"}`, settle: complete(journal.StateFailed, "", "terminal", "400 Bad Request: no seats")},
	{name: fxTransfer, tenant: "acme", session: "s1", turn: "4", tool: "transfer", effect: journal.Unkeyed,
		input: `{"to":"acct-9"}`, settle: complete(journal.StateSuppressed, "", "mismatch", "422: key reused with another payload")},
	{name: fxShip, tenant: "acme", session: "s1", turn: "4", tool: "ship", effect: journal.Keyed,
		input: `{"order":"o-1"}`},
	{name: fxOld, tenant: "acme", session: "s2", turn: "1", tool: "charge", effect: journal.Unkeyed,
		input: `{"amount":"5.00"}`, recordTTL: 30 * time.Minute, settle: complete(journal.StateSucceeded, `{"id":"ch_old"}`, "", "")},
	{name: fxBeta, tenant: "beta", session: "s3", turn: "1", tool: "search", effect: journal.ReadOnly,
		input: `{"q":"x"}`, settle: complete(journal.StateSucceeded, `{"hits":0}`, "", "")},
	{name: fxResolved, tenant: "acme", session: "s2", turn: "2", tool: "charge", effect: journal.Unkeyed,
		input: `{"amount":"7.00"}`, settle: func(t *testing.T, s journal.Store, key uuid.UUID, token uint64, clock *time.Time) {
			complete(journal.StateUnknown, "", "maybe-executed", "timeout")(t, s, key, token, clock)
			*clock = clock.Add(time.Minute)
			if _, err := s.Resolve(context.Background(), key, journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"id":"ch_7"}`), Reason: "seen in the PSP dashboard", By: "bob@ops"}); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
		}},
	{name: fxFPOnly, tenant: "acme", session: "s2", turn: "3", tool: "notify", effect: journal.Keyed,
		input: `{"msg":"done"}`, fpOnly: true, settle: complete(journal.StateSucceeded, "not json <&>", "", "")},
	{name: fxRetaken, tenant: "acme", session: "s2", turn: "4", tool: "pay", effect: journal.Unkeyed,
		input: `{"invoice":"inv-3"}`, settle: func(t *testing.T, s journal.Store, key uuid.UUID, token uint64, clock *time.Time) {
			complete(journal.StateFailed, "", "not-executed", "dial tcp: connection refused")(t, s, key, token, clock)
			// A re-issued call retakes it (the failure did not execute),
			// and its owner dies before starting the attempt.
			*clock = clock.Add(time.Second)
			r, err := s.Get(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Begin(context.Background(), journal.BeginRequest{Key: key, Intent: r.Intent, Fingerprint: r.Fingerprint,
				Effect: r.Effect, Input: r.Input, Owner: "agent-3", LeaseTTL: 30 * time.Second, Durable: true,
				Retake: func(*journal.Record) bool { return true }})
			if err != nil || res.Outcome != journal.TakenOver {
				t.Fatalf("Begin with Retake = %v, %v; want TakenOver", res.Outcome, err)
			}
		}},
}

// buildFixture writes the fixture journal into a new file in t.TempDir().
func buildFixture(t *testing.T) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	clock := t0
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return clock }}})
	if err != nil {
		t.Fatalf("OpenBolt(%s): %v", path, err)
	}
	d := &keyderive.Deriver{Namespace: testNS}
	fx := &fixture{path: path, keys: map[string]uuid.UUID{}}
	for i, in := range fixtureIntents {
		clock = t0.Add(time.Duration(i) * time.Minute)
		intent := keyderive.Intent{Tenant: in.tenant, Session: in.session, Turn: in.turn, Tool: in.tool}
		dv, err := d.Derive(intent, []byte(in.input))
		if err != nil {
			t.Fatalf("Derive(%s): %v", in.input, err)
		}
		req := journal.BeginRequest{
			Key: dv.Key, Intent: intent, Fingerprint: dv.Fingerprint, Effect: in.effect, Input: dv.Canonical,
			Owner: "agent-1", AttemptID: "att-" + in.name + "-1", LeaseTTL: 30 * time.Second,
			RecordTTL: in.recordTTL, Durable: true,
		}
		if in.fpOnly {
			req.Input = nil
		}
		if in.name == fxShip {
			req.Owner, req.LeaseTTL = "agent-2", 24*time.Hour
		}
		res, err := s.Begin(context.Background(), req)
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("Begin(%s) = %v, %v; want Started", in.name, res.Outcome, err)
		}
		if in.settle != nil {
			in.settle(t, s, dv.Key, res.Token, &clock)
		}
		fx.keys[in.name] = dv.Key
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fx
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
