package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// The draft's contract, request by request, on each store.
func TestContract(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		var l ledger
		opts := &idempotency.Options{
			Tenant: func(r *http.Request) (string, error) {
				if r.Header.Get("Authorization") == "" {
					return "", fmt.Errorf("no Authorization header")
				}
				return r.Header.Get("Authorization"), nil
			},
			Require:  func(r *http.Request) bool { return true },
			Volatile: map[string][]string{"POST /v1/charges": {"trace"}},
		}
		srv := chargeServer(t, open(), opts, &l, nil)
		url := srv.URL + "/v1/charges"
		auth := []string{"Authorization", "acme"}
		body := `{"amount":4900,"currency":"usd","trace":"a"}`

		st1, h1, b1 := post(t, url, "k1", body, auth...)
		if st1 != 201 || h1.Get("Idempotent-Replayed") != "" || h1.Get("Set-Cookie") == "" {
			t.Fatalf("first request: %d replayed=%q %s; want 201, not replayed, with the handler's Set-Cookie", st1, h1.Get("Idempotent-Replayed"), b1)
		}
		// The retry, reformatted and with another volatile field: the same
		// request, answered byte for byte from the journal.
		st2, h2, b2 := post(t, url, "k1", `{ "currency":"usd","amount":4900, "trace":"b"}`, auth...)
		if st2 != 201 || b2 != b1 || h2.Get("Location") != h1.Get("Location") || h2.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry = %d %q Location %q replayed %q; want 201 %q %q true",
				st2, b2, h2.Get("Location"), h2.Get("Idempotent-Replayed"), b1, h1.Get("Location"))
		}
		if h2.Get("Set-Cookie") != "" {
			t.Errorf("replay carries Set-Cookie %q; want it not stored", h2.Get("Set-Cookie"))
		}

		cases := []struct {
			name, key, body string
			hdr             []string
			status          int
			problem         string
		}{
			{"other payload", "k1", `{"amount":9900,"currency":"usd"}`, auth, 422, idempotency.ProblemKeyReused},
			{"no key", "", body, auth, 400, idempotency.ProblemKeyRequired},
			{"bad key", `"unclosed`, body, auth, 400, idempotency.ProblemKeyInvalid},
			{"no tenant", "k1", body, nil, 401, idempotency.ProblemUnauthenticated},
			{"too large", "k9", `{"x":"` + strings.Repeat("a", 2<<20) + `"}`, auth, 413, idempotency.ProblemBodyTooLarge},
		}
		for _, c := range cases {
			st, h, b := post(t, url, c.key, c.body, c.hdr...)
			var p struct {
				Type   string `json:"type"`
				Status int    `json:"status"`
			}
			_ = json.Unmarshal([]byte(b), &p)
			if st != c.status || h.Get("Content-Type") != "application/problem+json" ||
				p.Type != idempotency.ProblemBase+c.problem || p.Status != c.status {
				t.Errorf("%s: %d %s %s; want %d problem %s", c.name, st, h.Get("Content-Type"), b, c.status, c.problem)
			}
		}
		// Scope: another tenant, or another route, with the same key is
		// another request.
		if st, _, _ := post(t, url, "k1", body, "Authorization", "globex"); st != 201 {
			t.Errorf("same key, other tenant: %d; want 201", st)
		}
		if st, _, _ := post(t, srv.URL+"/v1/charges/ch_1/capture", "k1", body, auth...); st != 201 {
			t.Errorf("same key, other route: %d; want 201", st)
		}
		// The harness's Transport sends an Unkeyed tool's key in
		// X-Agentonce-Key: honoured like Idempotency-Key.
		for range 2 {
			if st, _, b := post(t, url, "", body, append(auth, "X-Agentonce-Key", "0b6b8f9e-unkeyed")...); st != 201 {
				t.Errorf("X-Agentonce-Key request = %d %s; want 201", st, b)
			}
		}
		if got := l.count(); got != 4 {
			t.Errorf("effects = %d; want 4 (k1 for acme, for globex, on capture, and the X-Agentonce-Key once)", got)
		}
	})
}

// A second request while the first runs gets 409 with Retry-After; with
// Wait it gets the first one's answer instead. The handler runs once.
func TestInFlight(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		for _, wait := range []time.Duration{0, time.Minute} {
			t.Run(fmt.Sprintf("wait=%s", wait), func(t *testing.T) {
				var l ledger
				entered, release := make(chan struct{}), make(chan struct{})
				srv := chargeServer(t, store, &idempotency.Options{Wait: wait}, &l, func(w http.ResponseWriter, r *http.Request) {
					l.add("")
					close(entered)
					<-release
					w.WriteHeader(201)
					fmt.Fprint(w, `{"id":"ch_1"}`)
				})
				key := fmt.Sprintf("k-%s", wait)
				first := make(chan string)
				go func() {
					_, _, b := post(t, srv.URL+"/v1/charges", key, `{}`)
					first <- b
				}()
				<-entered
				if wait == 0 {
					st, h, b := post(t, srv.URL+"/v1/charges", key, `{}`)
					if st != 409 || h.Get("Retry-After") != "1" || !strings.Contains(b, idempotency.ProblemInFlight) {
						t.Errorf("concurrent duplicate = %d Retry-After %q %s; want 409, 1, in-flight", st, h.Get("Retry-After"), b)
					}
					close(release)
				} else {
					second := make(chan string)
					go func() {
						_, _, b := post(t, srv.URL+"/v1/charges", key, `{}`)
						second <- b
					}()
					time.Sleep(50 * time.Millisecond) // let it start waiting; not needed for correctness
					close(release)
					if b := <-second; b != `{"id":"ch_1"}` {
						t.Errorf("waiting duplicate got %s; want the first answer", b)
					}
				}
				<-first
				if l.count() != 1 {
					t.Errorf("effects = %d; want 1", l.count())
				}
			})
		}
	})
}

// Many clients send one key at once: the handler runs once, and every
// answer is the stored one or a 409.
func TestHammer(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		var l ledger
		srv := chargeServer(t, open(), &idempotency.Options{Wait: time.Minute}, &l, nil)
		const clients, keys = 16, 8
		answers := make(map[string]map[string]bool)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for c := range clients {
			for k := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("key-%d", k)
					st, _, b := post(t, srv.URL+"/v1/charges", key, fmt.Sprintf(`{"k":%d}`, k))
					if st != 201 {
						t.Errorf("client %d key %s: %d %s", c, key, st, b)
					}
					mu.Lock()
					if answers[key] == nil {
						answers[key] = map[string]bool{}
					}
					answers[key][b] = true
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		if l.count() != keys {
			t.Errorf("effects = %d; want %d (one per key)", l.count(), keys)
		}
		for k, bs := range answers {
			if len(bs) != 1 {
				t.Errorf("key %s got %d different answers; want 1: %v", k, len(bs), bs)
			}
		}
	})
}

// A handler that panics leaves an unknown record; the retry is told so and
// does not run; an operator's verdict settles it.
func TestPanicLeavesUnknown(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		var l ledger
		store := open()
		srv := chargeServer(t, store, &idempotency.Options{ErrorLog: t.Logf}, &l, func(w http.ResponseWriter, r *http.Request) {
			l.add("")
			panic("card network timeout after the charge")
		})
		url := srv.URL + "/v1/charges"
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "kp")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("panicking handler answered %d; want the connection dropped", resp.StatusCode)
		}
		st, _, b := post(t, url, "kp", `{}`)
		if st != 500 || !strings.Contains(b, idempotency.ProblemOutcomeUnknown) || !strings.Contains(b, "agentctl resolve") {
			t.Errorf("retry after a panic = %d %s; want 500 outcome-unknown naming agentctl resolve", st, b)
		}
		if l.count() != 1 {
			t.Errorf("effects = %d; want 1 (no second run)", l.count())
		}
		recs := records(t, store, journal.StateUnknown)
		if len(recs) != 1 || recs[0].ErrorClass != idempotency.ClassPanic || recs[0].Intent.Tool != "POST /v1/charges" || recs[0].Intent.Session != "kp" {
			t.Fatalf("unknown records = %+v; want one, class panic, tool POST /v1/charges, session kp", recs)
		}
		// The operator checked: the charge did not go through.
		if _, err := store.Resolve(t.Context(), recs[0].Key, journal.Resolution{State: journal.StateFailed, Reason: "no charge at the network", By: "ops"}); err != nil {
			t.Fatal(err)
		}
		st, _, _ = post(t, url, "kp", `{}`)
		if st != 500 || l.count() != 2 {
			t.Errorf("after resolve failed: %d, effects %d; want the handler run again (effects 2)", st, l.count())
		}
	})
}

func records(t *testing.T, s journal.Store, st journal.State) []journal.Record {
	t.Helper()
	var out []journal.Record
	for r, err := range s.List(t.Context(), journal.Filter{State: st}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A 5xx is not stored: the key is released and the retry runs again; with
// StoreServerErrors it is replayed.
func TestServerErrors(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		store := open()
		for _, keep := range []bool{false, true} {
			var l ledger
			srv := chargeServer(t, store, &idempotency.Options{StoreServerErrors: keep}, &l, func(w http.ResponseWriter, r *http.Request) {
				if l.add("") == 1 {
					http.Error(w, "database down", 503)
					return
				}
				w.WriteHeader(201)
			})
			key := fmt.Sprintf("k5-%t", keep)
			post(t, srv.URL+"/v1/charges", key, `{}`)
			st, _, _ := post(t, srv.URL+"/v1/charges", key, `{}`)
			want, effects := 201, 2
			if keep {
				want, effects = 503, 1
			}
			if st != want || l.count() != effects {
				t.Errorf("StoreServerErrors=%t: retry = %d, effects %d; want %d, %d", keep, st, l.count(), want, effects)
			}
		}
	})
}

// A slow handler keeps its lease: retries meanwhile are held, not taken
// over, however long it runs past LeaseTTL.
func TestSlowHandlerKeepsLease(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		var l ledger
		release := make(chan struct{})
		const lease = 300 * time.Millisecond
		srv := chargeServer(t, open(), &idempotency.Options{LeaseTTL: lease}, &l, func(w http.ResponseWriter, r *http.Request) {
			l.add("")
			<-release
			w.WriteHeader(201)
		})
		done := make(chan int)
		go func() { st, _, _ := post(t, srv.URL+"/v1/charges", "slow", `{}`); done <- st }()
		for l.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		for range 6 { // 6 × lease/2: three leases' worth
			time.Sleep(lease / 2)
			if st, _, b := post(t, srv.URL+"/v1/charges", "slow", `{}`); st != 409 {
				t.Errorf("retry during the slow handler = %d %s; want 409", st, b)
			}
		}
		close(release)
		if st := <-done; st != 201 {
			t.Errorf("slow handler's answer = %d; want 201", st)
		}
		if st, _, _ := post(t, srv.URL+"/v1/charges", "slow", `{}`); st != 201 || l.count() != 1 {
			t.Errorf("after: %d, effects %d; want 201 replayed, 1", st, l.count())
		}
	})
}

// A client that gives up does not cut its handler off: the handler
// finishes, its answer is recorded, and the client's retry gets it.
func TestClientGoneHandlerFinishes(t *testing.T) {
	var l ledger
	entered, release := make(chan struct{}), make(chan struct{})
	store := openAt(t, t.TempDir()+"/gone.journal")
	var once sync.Once
	srv := chargeServer(t, store, nil, &l, func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		<-release
		if err := r.Context().Err(); err != nil {
			http.Error(w, "cancelled: "+err.Error(), 503) // a rolled-back effect
			return
		}
		l.add("")
		w.WriteHeader(201)
		fmt.Fprint(w, `{"id":"ch_1"}`)
	})
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges", strings.NewReader(`{}`))
	req.Header.Set("Idempotency-Key", "gone")
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-entered
	cancel()
	<-errc
	close(release)
	for range 100 { // until the first request has been recorded
		st, _, b := post(t, srv.URL+"/v1/charges", "gone", `{}`)
		if st == 409 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if st != 201 || b != `{"id":"ch_1"}` {
			t.Errorf("retry after the client gave up = %d %s; want the recorded 201", st, b)
		}
		break
	}
	if l.count() != 1 {
		t.Errorf("effects = %d; want 1", l.count())
	}
}
