package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// shop is an application with data of its own: the charges it made, by
// idempotency key. Its handler commits a charge, then answers or (panics)
// dies without answering; its Reconcile looks the key up.
type shop struct {
	mu      sync.Mutex
	charges map[string]string // key → charge id, as a reader sees them
	late    map[string]string // committed, not yet visible (a replica's lag)
	panics  bool              // the handler panics after its commit
	hide    bool              // a commit lands in late
	runs    atomic.Int32      // the handler's runs that committed a charge
	asks    atomic.Int32      // Reconcile's calls
	answer  func(id string) downstream.Reconciliation
}

func (s *shop) handler(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	id := fmt.Sprintf("ch_%d", s.runs.Add(1))
	s.mu.Lock()
	if s.charges == nil {
		s.charges, s.late = map[string]string{}, map[string]string{}
	}
	if s.hide {
		s.late[key] = id
	} else {
		s.charges[key] = id
	}
	panics := s.panics
	s.mu.Unlock()
	if panics {
		panic(http.ErrAbortHandler) // the response is lost; net/http logs nothing
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/charges/"+id)
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%q}`, id)
}

// reveal makes the late commits visible.
func (s *shop) reveal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.late {
		s.charges[k] = v
	}
	clear(s.late)
}

// reconcile is the shop's Options.Reconcile: the charge's answer as the
// handler gives it, from the shop's data.
func (s *shop) reconcile(r *http.Request, key string) downstream.Reconciliation {
	s.asks.Add(1)
	s.mu.Lock()
	id, ok := s.charges[key]
	s.mu.Unlock()
	switch {
	case !ok:
		return downstream.DidNotHappen()
	case s.answer != nil:
		return s.answer(id)
	}
	out, err := idempotency.ResolvedResponse(http.StatusCreated,
		http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/charges/" + id}}, fmt.Appendf(nil, `{"id":%q}`, id))
	if err != nil {
		return downstream.CannotTell(err)
	}
	return downstream.Happened(out)
}

// shopServer serves s's charges on m, with m's lookup mounted.
func shopServer(t *testing.T, m *idempotency.Middleware, s *shop) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(s.handler)))
	mux.Handle("GET /agentonce/lookup", m.Lookup(mux))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func reconciling(t *testing.T, store journal.Store, s *shop, settle time.Duration) *idempotency.Middleware {
	t.Helper()
	return reconcilingWith(t, store, s.reconcile, settle)
}

func reconcilingWith(t *testing.T, store journal.Store, hook func(*http.Request, string) downstream.Reconciliation, settle time.Duration) *idempotency.Middleware {
	t.Helper()
	m, err := idempotency.New(store, &idempotency.Options{Reconcile: hook, Settle: settle, ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// untilChecked sends the request again while it is answered 409 (its
// outcome is being checked), and returns the first other answer and how
// many 409s came before it.
func untilChecked(t *testing.T, url, key string) (st int, h http.Header, body string, waits int) {
	t.Helper()
	for range 1000 {
		if st, h, body = post(t, url, key, `{"amount":100}`); st != http.StatusConflict {
			return st, h, body, waits
		}
		waits++
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("still 409 after %d tries: %s", waits, body)
	return
}

// A handler commits to the application's data and dies without an answer:
// the retry, once the settle window has passed, is answered from the
// application's Reconcile with the handler's status, headers and body, and
// so is every retry after it, byte for byte; the handler ran once.
func TestReconcileHappened(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		s := &shop{panics: true}
		url := shopServer(t, reconciling(t, store, s, 50*time.Millisecond), s).URL + "/v1/charges"
		if st, _, _ := post(t, url, "k1", `{"amount":100}`); st != 0 {
			t.Fatalf("the panicking handler answered %d; want the connection dropped", st)
		}
		st, h, body, _ := untilChecked(t, url, "k1")
		if st != 201 || body != `{"id":"ch_1"}` || h.Get("Location") != "/v1/charges/ch_1" || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry = %d %v %s; want the charge's 201 with its Location, replayed", st, h, body)
		}
		st2, h2, body2 := post(t, url, "k1", `{"amount":100}`)
		if st2 != st || body2 != body || h2.Get("Location") != h.Get("Location") || h2.Get("Content-Type") != "application/json" {
			t.Errorf("second retry = %d %v %s; want the same answer", st2, h2, body2)
		}
		if s.runs.Load() != 1 || s.asks.Load() != 1 {
			t.Errorf("handler runs = %d, Reconcile asks = %d; want 1 and 1", s.runs.Load(), s.asks.Load())
		}
		recs := records(t, store, journal.StateSucceeded)
		if len(recs) != 1 || recs[0].ErrorClass != idempotency.ClassReconciled {
			t.Errorf("succeeded records = %+v; want one, class %s", recs, idempotency.ClassReconciled)
		}
	})
}

// A "did not happen" runs the request again only when a second one, a
// settle window later, agrees; a commit that becomes visible between the
// two is found by the second, and nothing runs twice.
func TestReconcileDidNotHappen(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		t.Run("twice", func(t *testing.T) {
			s := &shop{panics: true, hide: true} // the first run's commit is lost
			url := shopServer(t, reconciling(t, store, s, 50*time.Millisecond), s).URL + "/v1/charges"
			post(t, url, "k2", `{"amount":100}`)
			s.mu.Lock()
			s.panics, s.hide = false, false
			clear(s.late) // rolled back: it never took effect
			s.mu.Unlock()
			st, _, body, waits := untilChecked(t, url, "k2")
			if st != 201 || body != `{"id":"ch_2"}` || s.asks.Load() != 2 || waits == 0 {
				t.Fatalf("retry = %d %s after %d waits, %d asks; want the handler run again (ch_2) after two asks",
					st, body, waits, s.asks.Load())
			}
		})
		t.Run("late", func(t *testing.T) {
			s := &shop{panics: true, hide: true}
			url := shopServer(t, reconciling(t, store, s, 50*time.Millisecond), s).URL + "/v1/charges"
			post(t, url, "k3", `{"amount":100}`)
			for s.asks.Load() == 0 {
				if st, _, body := post(t, url, "k3", `{"amount":100}`); st != http.StatusConflict {
					t.Fatalf("retry before the second ask = %d %s; want 409", st, body)
				}
				time.Sleep(10 * time.Millisecond)
			}
			s.reveal() // the first run's commit lands after the first "did not happen"
			st, _, body, _ := untilChecked(t, url, "k3")
			if st != 201 || body != `{"id":"ch_1"}` || s.runs.Load() != 1 || s.asks.Load() != 2 {
				t.Fatalf("retry = %d %s, runs %d, asks %d; want ch_1 from the second ask, one run",
					st, body, s.runs.Load(), s.asks.Load())
			}
		})
	})
}

// A Reconcile that cannot tell leaves the outcome unknown, answered as
// before; the next retry asks again.
func TestReconcileCannotTell(t *testing.T) {
	store := openBolt(t)
	s := &shop{panics: true}
	s.answer = func(string) downstream.Reconciliation { return downstream.CannotTell(fmt.Errorf("ledger offline")) }
	var told atomic.Int32 // OnUnknown: the panic, then each "cannot tell"
	m, err := idempotency.New(store, &idempotency.Options{Reconcile: s.reconcile, Settle: time.Millisecond, ErrorLog: t.Logf,
		OnUnknown: func(context.Context, journal.Record) { told.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	url := shopServer(t, m, s).URL + "/v1/charges"
	post(t, url, "k4", `{"amount":100}`)
	for i := 1; i <= 2; i++ {
		st, _, body, _ := untilChecked(t, url, "k4")
		if st != 500 || !strings.Contains(body, idempotency.ProblemOutcomeUnknown) || !strings.Contains(body, "ledger offline") {
			t.Fatalf("retry %d = %d %s; want 500 outcome-unknown saying why", i, st, body)
		}
		if s.asks.Load() != int32(i) {
			t.Fatalf("asks after retry %d = %d; want %d", i, s.asks.Load(), i)
		}
	}
	if s.runs.Load() != 1 {
		t.Errorf("handler runs = %d; want 1", s.runs.Load())
	}
	if recs := records(t, store, journal.StateUnknown); len(recs) != 1 || recs[0].ErrorClass != idempotency.ClassCannotTell {
		t.Errorf("unknown records = %+v; want one, class %s", recs, idempotency.ClassCannotTell)
	}
	if told.Load() != 3 {
		t.Errorf("OnUnknown told %d times; want 3 (the panic, then each retry Reconcile could not settle)", told.Load())
	}
}

// A "happened" whose answer cannot be replayed is refused, naming what is
// wrong: the outcome stays unknown and nothing runs again.
func TestReconcileRefusesAnswer(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"empty", "", "holds no answer"},
		{"not JSON", "charged!", "neither ResolvedResponse's answer nor JSON"},
		{"bad hash", "agentonce-http/1 201 sha256=" + strings.Repeat("0", 64) + "\n\n{}", "does not match its sha256"},
		{"bad envelope", "agentonce-http/1 2O1 sha256=x\n\n", "bad status"},
		{"too large", `"` + strings.Repeat("x", 1<<20) + `"`, "over MaxStoredBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openBolt(t)
			s := &shop{panics: true}
			s.answer = func(string) downstream.Reconciliation { return downstream.Happened([]byte(tc.out)) }
			url := shopServer(t, reconciling(t, store, s, time.Millisecond), s).URL + "/v1/charges"
			post(t, url, "k5", `{"amount":100}`)
			st, _, body, _ := untilChecked(t, url, "k5")
			if st != 500 || !strings.Contains(body, idempotency.ProblemOutcomeUnknown) || !strings.Contains(body, tc.want) {
				t.Errorf("retry = %d %s; want 500 outcome-unknown saying %q", st, body, tc.want)
			}
			if s.runs.Load() != 1 {
				t.Errorf("handler runs = %d; want 1", s.runs.Load())
			}
			if recs := records(t, store, journal.StateUnknown); len(recs) != 1 || !strings.Contains(recs[0].ErrorMessage, tc.want) {
				t.Errorf("unknown records = %+v; want one saying %q", recs, tc.want)
			}
		})
	}
}

// Two servers on one journal asked about the same key at once: one takes
// the record over and asks the application; the other is told the key is
// being handled. The verdict is recorded once.
func TestReconcileTwoServers(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		s := &shop{panics: true}
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		hook := func(r *http.Request, key string) downstream.Reconciliation {
			once.Do(func() { close(entered); <-release })
			return s.reconcile(r, key)
		}
		srv1 := shopServer(t, reconcilingWith(t, store, hook, time.Millisecond), s)
		srv2 := shopServer(t, reconcilingWith(t, store, hook, time.Millisecond), s)
		post(t, srv1.URL+"/v1/charges", "k6", `{"amount":100}`)
		first := make(chan string)
		go func() {
			for {
				st, _, body := post(t, srv1.URL+"/v1/charges", "k6", `{"amount":100}`)
				select {
				case <-entered:
				default:
					if st == http.StatusConflict { // still in its settle window, on a slow machine
						time.Sleep(time.Millisecond)
						continue
					}
				}
				first <- fmt.Sprint(st, " ", body)
				return
			}
		}()
		select {
		case <-entered:
		case st := <-first:
			t.Fatalf("the first server answered %s without asking Reconcile", st)
		}
		if st, _, body := post(t, srv2.URL+"/v1/charges", "k6", `{"amount":100}`); st != http.StatusConflict {
			t.Errorf("the other server during the reconcile = %d %s; want 409", st, body)
		}
		close(release)
		if got := <-first; got != `201 {"id":"ch_1"}` {
			t.Errorf("the reconciling server answered %s; want 201 ch_1", got)
		}
		if st, _, body := post(t, srv2.URL+"/v1/charges", "k6", `{"amount":100}`); st != 201 || body != `{"id":"ch_1"}` {
			t.Errorf("the other server after = %d %s; want 201 ch_1", st, body)
		}
		if s.runs.Load() != 1 || s.asks.Load() != 1 {
			t.Errorf("runs = %d, asks = %d; want 1 and 1", s.runs.Load(), s.asks.Load())
		}
	})
}

func openBolt(t *testing.T) journal.Store {
	return openAt(t, t.TempDir()+"/server.journal")
}

// A run reconciled more than a TTL after it started answers for a TTL
// from the reconcile: the retry right after it is answered, not run as a
// key past its TTL.
func TestReconcileAfterTTL(t *testing.T) {
	store := openBolt(t)
	s := &shop{panics: true}
	m, err := idempotency.New(store, &idempotency.Options{Reconcile: s.reconcile, Settle: time.Millisecond,
		TTL: time.Second, LeaseTTL: time.Second, ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	url := shopServer(t, m, s).URL + "/v1/charges"
	post(t, url, "k7", `{"amount":100}`)
	time.Sleep(1100 * time.Millisecond) // past the TTL of the first request
	for i := range 2 {
		if st, _, body := post(t, url, "k7", `{"amount":100}`); st != 201 || body != `{"id":"ch_1"}` {
			t.Fatalf("retry %d = %d %s; want 201 ch_1", i, st, body)
		}
	}
	recs := records(t, store, journal.StateSucceeded)
	if s.runs.Load() != 1 || len(recs) != 1 || len(recs[0].Attempts) != 2 || recs[0].Attempts[1].Class != idempotency.ClassReconciled {
		t.Errorf("runs = %d, records %+v; want 1 run, the check an attempt of class reconciled", s.runs.Load(), recs)
	}
}
