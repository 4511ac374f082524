package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// trips counts the round trips a client makes: a command, or a pipeline,
// is one. What a shared or busy server adds is told apart: a NOSCRIPT
// answer (another user of the server flushed its script cache; the store
// sends the source next) ran nothing and is not counted; a decision
// refused for a late clock (the answer of the write before came more than
// the allowed lag after the server read TIME: an fsync slowed by other
// writers) is counted in late too, since the decision is made again on
// the time the refusal answered unless the records it answered settle it.
type trips struct{ n, late atomic.Int64 }

// count is the round trips since before, those refused for a late clock
// among them.
type count struct{ n, late int64 }

func (t *trips) count() count { return count{t.n.Load(), t.late.Load()} }

func (t *trips) since(before count) count {
	c := t.count()
	return count{c.n - before.n, c.late - before.late}
}

// is reports whether c is want round trips, where each decision refused
// for a late clock may have added one.
func (c count) is(want int64) bool { return c.n-c.late <= want && want <= c.n }

func (c count) String() string {
	if c.late == 0 {
		return fmt.Sprintf("%d round trips", c.n)
	}
	return fmt.Sprintf("%d round trips (%d refused for a late clock)", c.n, c.late)
}

// lateClock reports a script run refused because the decision's clock
// (ARGV[1], in microseconds) was not within the allowed lag (ARGV[2])
// behind the server's TIME the refusal answered: the script's own check,
// made again on what was sent and answered.
func lateClock(cmd goredis.Cmder) bool {
	if name := strings.ToLower(cmd.Name()); name != "evalsha" && name != "eval" {
		return false
	}
	c, ok := cmd.(interface{ Val() any }) // a *goredis.Cmd, or the store's wrapper of one
	if !ok {
		return false
	}
	a, ok := c.Val().([]any)
	args := cmd.Args()
	if !ok || len(a) < 3 || a[0] != int64(0) || len(args) < 3 {
		return false
	}
	nkeys, ok := integer(args[2])
	if !ok || int64(len(args)) < 5+nkeys {
		return false
	}
	decided, ok1 := integer(args[3+nkeys])
	lag, ok2 := integer(args[4+nkeys])
	sec, ok3 := integer(a[1])
	usec, ok4 := integer(a[2])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false // no clock sent
	}
	server := sec*1_000_000 + usec
	return decided > server || decided < server-lag
}

// integer reads an argument or answer that is an integer or its decimal
// string.
func integer(v any) (int64, bool) {
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	return n, err == nil
}

func (t *trips) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (t *trips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			return err
		}
		t.n.Add(1)
		if lateClock(cmd) {
			t.late.Add(1)
		}
		return err
	}
}

func (t *trips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// countedClient is a client of the test server whose round trips t counts.
func countedClient(tb testing.TB, t *trips) goredis.UniversalClient {
	o, err := goredis.ParseURL(redisURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	c := goredis.NewClient(o)
	c.AddHook(t)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// keyedRequest is a Begin of the idempotency middleware's kind: Keyed,
// durable, no guard.
func keyedRequest() journal.BeginRequest {
	return journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: "a",
		Intent:      keyderive.Intent{Session: uuid.NewString(), Tool: "POST /v1/charges"},
		Fingerprint: keyderive.FingerprintOf([]byte(`{"amount":4900}`)), Effect: journal.Keyed,
		Input: []byte(`{"amount":4900}`), Durable: true, Guard: journal.GuardOff}
}

// A new key is two round trips, Begin's script and Complete's, and a
// replay through Begin one: the decisions on a record this store wrote or
// read need no read of their own.
func TestRoundTrips(t *testing.T) {
	var n trips
	c := countedClient(t, &n)
	s := openStore(t, c, prefix(t, c), nil)
	defer s.Close()
	ctx := context.Background()
	req := keyedRequest()
	before := n.count()
	res, err := s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin = %v, %v; want Started", res.Outcome, err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token,
		State: journal.StateSucceeded, Output: []byte(`{"id":"ch_1"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := n.since(before); !got.is(2) {
		t.Errorf("new key: %v for Begin and Complete; want 2", got)
	}
	before = n.count()
	res, err = s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Answered || string(res.Record.Output) != `{"id":"ch_1"}` {
		t.Fatalf("replay Begin = %v %q, %v; want Answered with the output", res.Outcome, res.Record.Output, err)
	}
	if got := n.since(before); !got.is(1) {
		t.Errorf("replay: %v for Begin; want 1", got)
	}
}

// BenchmarkReadFirst sets the read a replay could be answered by beside
// the Begin that answers it anyway, on one Redis server: get-settled and
// begin-settled read one settled record (through GET, through Begin's
// script), get-absent is the read a new key pays when a Get comes before
// Begin.
func BenchmarkReadFirst(b *testing.B) {
	var n trips
	c := countedClient(b, &n)
	s := openStore(b, c, prefix(b, c), nil)
	defer s.Close()
	ctx := context.Background()
	req := keyedRequest()
	res, err := s.Begin(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token,
		State: journal.StateSucceeded, Output: []byte(`{"id":"ch_3Nq8ZL2eZvKYlo2C0x1a","object":"charge","status":"succeeded","amount":4900}`)}); err != nil {
		b.Fatal(err)
	}
	run := func(name string, fn func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			t0 := n.n.Load()
			for b.Loop() {
				if err := fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n.n.Load()-t0)/float64(b.N), "roundtrips/op")
		})
	}
	run("get-settled", func() error { _, err := s.Get(ctx, req.Key); return err })
	run("begin-settled", func() error {
		res, err := s.Begin(ctx, req)
		if err == nil && res.Outcome != journal.Answered {
			err = errors.New("not answered")
		}
		return err
	})
	absent := uuid.New()
	run("get-absent", func() error {
		if _, err := s.Get(ctx, absent); !errors.Is(err, journal.ErrNotFound) {
			return err
		}
		return nil
	})
}

// Through the idempotency middleware a new key is two round trips (no Get
// before Begin: the store says BeginReplays), its retry none (the
// Middleware keeps the answer it recorded), a retry through another
// Middleware on the journal one (Begin's script, which finds the record and
// writes nothing), and that Middleware's next retry none.
func TestMiddlewareRoundTrips(t *testing.T) {
	var n trips
	c := countedClient(t, &n)
	s := openStore(t, c, prefix(t, c), nil)
	defer s.Close()
	handler := func() http.Handler {
		m, err := idempotency.New(s, &idempotency.Options{ErrorLog: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"ch_1"}`))
		})))
		return mux
	}
	send := func(h http.Handler, key string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(`{"amount":4900}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || w.Body.String() != `{"id":"ch_1"}` {
			t.Fatalf("key %s = %d %s; want 200 and the charge", key, w.Code, w.Body)
		}
	}
	h, other := handler(), handler()
	for _, step := range []struct {
		what string
		h    http.Handler
		want int64
	}{{"new key", h, 2}, {"retry", h, 0}, {"retry through another Middleware", other, 1},
		{"second retry through another Middleware", other, 0}} {
		before := n.count()
		send(step.h, "k1")
		if got := n.since(before); !got.is(step.want) {
			t.Errorf("%s: %v; want %d", step.what, got, step.want)
		}
	}
}
