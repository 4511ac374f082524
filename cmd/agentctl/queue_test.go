package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// queueStore is a journal with the fixture's intents and three more made
// at testNow: an unknown one still in its settle window (not listed), an
// in-flight suppression past its window (listed, needs a re-issue), and a
// server's request whose handler panicked after its effect (listed, with
// the middleware's key). retry sends that request again; runs counts the
// handler's runs.
type queueStore struct {
	loc        string
	serverKey  string
	retry      func() *httptest.ResponseRecorder
	runs       *atomic.Int32
	settling   string
	suppressed string
	awaiting   awaiting
}

func newQueueStore(t *testing.T, loc string, open func() journal.Store) *queueStore {
	t.Helper()
	s := open()
	ctx := context.Background()
	qs := &queueStore{loc: loc, runs: new(atomic.Int32)}
	begin := func(tool string, settle time.Duration, state journal.State, class string) string {
		key := uuid.New()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Intent: keyderive.Intent{Tenant: "acme", Session: "s9", Turn: "1", Tool: tool},
			Effect: journal.Unkeyed, Owner: "agent-9", AttemptID: "a-" + tool, LeaseTTL: time.Minute, Settle: settle, Durable: true})
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("Begin(%s) = %v, %v", tool, res.Outcome, err)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: state, ErrorClass: class}); err != nil {
			t.Fatalf("Complete(%s): %v", tool, err)
		}
		return key.String()
	}
	qs.settling = begin("notify", time.Hour, journal.StateUnknown, "maybe-executed")
	qs.suppressed = begin("wire", 0, journal.StateSuppressed, journal.ClassInFlight)
	qs.awaiting = beginAwaiting(t, s, "refund", `{"amount":900}`, 1, time.Hour)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if qs.runs.Add(1) == 1 {
			panic("lost the card network after charging")
		}
		w.WriteHeader(http.StatusTeapot) // a second run: the duplicate charge
	})
	// Each request is served by a server on the journal as opened then,
	// so that agentctl has the journal between requests.
	qs.retry = func() *httptest.ResponseRecorder {
		s := open()
		defer s.Close()
		m, err := idempotency.New(s, &idempotency.Options{ErrorLog: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/charges", m.Handler(handler))
		req := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(`{"amount":100}`))
		req.Header.Set("Idempotency-Key", "order-77")
		rec := httptest.NewRecorder()
		func() {
			defer func() { recover() }() // the first run's panic, re-raised by the middleware
			mux.ServeHTTP(rec, req)
		}()
		return rec
	}
	qs.retry()
	var p struct {
		JournalKey string `json:"journal_key"`
	}
	if rec := qs.retry(); rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
		t.Fatalf("retry after the panic = %d %s; want 500 outcome-unknown", rec.Code, rec.Body)
	}
	qs.serverKey = p.JournalKey
	return qs
}

// queueItems runs queue --json and decodes its lines.
func queueItems(t *testing.T, loc string, args ...string) ([]queueItem, result) {
	t.Helper()
	r := agentctl(t, false, append([]string{"queue", "--json", "--journal", loc}, args...)...)
	var items []queueItem
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var it queueItem
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("queue --json line %q: %v", line, err)
		}
		items = append(items, it)
	}
	return items, r
}

// The queue lists what needs a person, oldest first, on every store: the
// fixture's pending intents whose owner stopped and its unknown one (on a
// bbolt file agentctl can open, a live lease is a stopped process's; on
// PostgreSQL and Redis it is in flight), the in-flight suppression, and
// the server's request, told apart from the agent's; not the intent in its
// settle window. The commands it shows settle each record when run as
// shown; then only the suppression is left, which no command settles.
func TestQueue(t *testing.T) {
	clock := &journal.Options{Now: func() time.Time { return testNow }}
	t.Run("bolt", func(t *testing.T) {
		fx := buildFixture(t)
		checkQueue(t, newQueueStore(t, fx.path, func() journal.Store {
			s, err := openAt(context.Background(), fx.path, clock, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}), fx.keys, []string{fxCharge, fxRefund, fxEmail, fxShip, fxRetaken})
	})
	remote := func(t *testing.T, loc string) {
		fx := buildFixture(t)
		if r := agentctl(t, false, "import", writeFile(t, exportOf(t, fx.path)), "--journal", loc, "--create"); r.code != 0 {
			t.Fatalf("import = %d, %s", r.code, r.stderr)
		}
		checkQueue(t, newQueueStore(t, loc, func() journal.Store {
			s, err := openAt(context.Background(), loc, clock, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}), fx.keys, []string{fxCharge, fxRefund, fxEmail, fxRetaken}) // fxShip's lease is live: in flight
	}
	t.Run("postgres", func(t *testing.T) { remote(t, pgJournal(t)) })
	t.Run("redis", func(t *testing.T) { remote(t, redisJournal(t)) })
}

func checkQueue(t *testing.T, qs *queueStore, keys map[string]uuid.UUID, fixtureNames []string) {
	var want []string
	for _, n := range fixtureNames {
		want = append(want, keys[n].String())
	}
	want = append(want, qs.suppressed, qs.serverKey, qs.awaiting.key.String())
	items, r := queueItems(t, qs.loc)
	if r.code != exitQueued {
		t.Fatalf("queue = %d, %q; want %d", r.code, r.stderr, exitQueued)
	}
	var got []string
	for i, it := range items {
		got = append(got, it.Key)
		if i > 0 && it.Created.Before(items[i-1].Created) {
			t.Errorf("queue item %d (%s) is older than the one before it; want oldest first", i, it.Key)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("queue lists %v; want %v", got, want)
	}
	tsv := agentctl(t, false, "queue", "--journal", qs.loc)
	if n := strings.Count(tsv.stdout, "\n"); tsv.code != exitQueued || n != len(want) {
		t.Errorf("queue = %d with %d lines; want %d lines, exit %d:\n%s", tsv.code, n, len(want), exitQueued, tsv.stdout)
	}
	human := agentctl(t, true, "queue", "--journal", qs.loc)
	last := "\n" + strconv.Itoa(len(want)) + ". " // the last block's number
	if human.code != exitQueued || !strings.HasPrefix(human.stdout, "1. ") || !strings.Contains(human.stdout, last) ||
		strings.Count(human.stdout, "   # it did not happen\n") != len(want)-2 || !strings.Contains(human.stdout, "   # it must not run\n") {
		t.Errorf("queue on a terminal = %d:\n%s\nwant %d blocks, all but the suppression with their commands", human.code, human.stdout, len(want))
	}
	if two, r := queueItems(t, qs.loc, "--limit", "2"); len(two) != 2 || two[0].Key != items[0].Key || two[1].Key != items[1].Key ||
		!strings.Contains(r.stderr, "need a person; showing the oldest 2") {
		t.Errorf("queue --limit 2 = %v, %q; want the oldest two and a note of the rest", two, r.stderr)
	}

	settled := map[string]journal.State{}
	for i, it := range items {
		switch {
		case it.Key == qs.suppressed:
			if it.Needs != needReissue || it.End != "agent" || len(it.Commands) != 0 {
				t.Errorf("the in-flight suppression is listed as %+v; want needs reissue, no command", it)
			}
			continue
		case it.Key == qs.awaiting.key.String():
			if it.Needs != needApprove || len(it.Commands) != 2 || !strings.Contains(it.Commands[0].Command, "--fingerprint "+qs.awaiting.fp.String()) {
				t.Fatalf("the intent awaiting approval is listed as %+v; want needs approve, the approve command naming its input", it)
			}
			runCommand(t, it.Commands[0].Command) // it may run
			if rec := getRecord(t, qs.loc, it.Key); rec.State != journal.StateAwaiting || len(rec.Approval.Given) != 1 {
				t.Errorf("after the approve command, %s is %s with %v; want awaiting with one approval", it.Key, rec.State, rec.Approval)
			}
			continue
		case it.Key == qs.serverKey:
			if it.End != "server" || it.Tool != "POST /v1/charges" || it.Session != "order-77" || it.Needs != needResolve {
				t.Errorf("the server's request is listed as %+v; want end server, its route and the client's key", it)
			}
			runCommand(t, it.Commands[0].Command) // it happened
			settled[it.Key] = journal.StateSucceeded
			continue
		}
		if it.End != "agent" || it.Needs != needResolve || len(it.Commands) != 2 {
			t.Fatalf("agent intent listed as %+v; want end agent, needs resolve, two commands", it)
		}
		runCommand(t, it.Commands[i%2].Command)
		settled[it.Key] = [...]journal.State{journal.StateSucceeded, journal.StateFailed}[i%2]
	}
	for key, st := range settled {
		if rec := getRecord(t, qs.loc, key); rec.State != st || rec.Resolution == nil {
			t.Errorf("after its command, %s is %s (resolution %v); want %s by an operator", key, rec.State, rec.Resolution, st)
		}
	}
	if rest, r := queueItems(t, qs.loc); len(rest) != 1 || rest[0].Key != qs.suppressed || r.code != exitQueued {
		t.Errorf("queue after the commands = %d, %v; want only the in-flight suppression", r.code, rest)
	}

	// The server's retry gets the restored answer; the handler ran once.
	rec := qs.retry()
	if rec.Code != http.StatusOK || rec.Body.String() != "{}" || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after the resolve = %d %v %q; want 200 {} replayed", rec.Code, rec.Header(), rec.Body)
	}
	if n := qs.runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times; want 1", n)
	}
}

// runCommand runs a command that queue shows, as a POSIX shell would
// split it (words, and single-quoted strings).
func runCommand(t *testing.T, line string) {
	t.Helper()
	args := shellSplit(t, line)
	if len(args) == 0 || args[0] != "agentctl" {
		t.Fatalf("command %q does not start with agentctl", line)
	}
	if r := agentctl(t, false, args[1:]...); r.code != 0 {
		t.Fatalf("%s = %d, %q", line, r.code, r.stderr)
	}
}

// shellSplit splits line into words as sh does for words and single
// quotes, the only quoting shellQuote uses.
func shellSplit(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteRune(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		case c == '"' || c == '\\' || c == '$' || c == '#':
			t.Fatalf("command %q holds %q, which this test does not split", line, c)
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("command %q has an unterminated quote", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// redisJournal is a new prefix of the test's Redis server as a journal
// location, removed after the test; the test is skipped without a server.
func redisJournal(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AGENTONCE_REDIS_URL")
	if u == "" {
		if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
			t.Fatal("AGENTONCE_REQUIRE_REDIS is set but AGENTONCE_REDIS_URL is empty")
		}
		t.Skip("AGENTONCE_REDIS_URL not set")
	}
	prefix := "agentctl-test-" + uuid.NewString()
	t.Cleanup(func() {
		o, err := goredis.ParseURL(u)
		if err != nil {
			return
		}
		c := goredis.NewClient(o)
		defer c.Close()
		ctx := context.Background()
		for it := c.Scan(ctx, 0, "{"+prefix+"}:*", 1000).Iterator(); it.Next(ctx); {
			c.Del(ctx, it.Val())
		}
	})
	return u + "?prefix=" + prefix
}

// Bad arguments are usage errors, before any journal is opened.
func TestQueueUsage(t *testing.T) {
	for _, args := range [][]string{{"queue", "extra"}, {"queue", "--limit", "-1"}} {
		if r := agentctl(t, false, append(args, "--journal", "/no/such/journal")...); r.code != exitUsage {
			t.Errorf("%v = %d, %q; want %d", args, r.code, r.stderr, exitUsage)
		}
	}
	if r := agentctl(t, false, "queue", "--journal", buildFixture(t).path, "--tenant", "nobody"); r.code != 0 || r.stdout != "" {
		t.Errorf("queue --tenant nobody = %d, %q; want nothing, exit 0", r.code, r.stdout)
	}
}
