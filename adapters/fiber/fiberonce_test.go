package fiberonce_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/google/uuid"

	fiberonce "github.com/agentonce/agentonce/adapters/fiber"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// stores are the journals the tests run on: a bbolt file. (Redis, through
// journal/redis, is a module not yet published, which an adapter cannot
// require; idempotency/internal/fibercompare runs this adapter on Redis.)
func stores(t *testing.T) map[string]journal.Store {
	t.Helper()
	out := map[string]journal.Store{}
	b, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "server.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	out["bolt"] = b
	return out
}

// app is a Fiber app on loopback with the middleware under app.Use and a
// charge route whose effects are counted; gate, when not nil, holds the
// handler until it is closed.
type app struct {
	base    string
	effects atomic.Int64
	gate    chan struct{}
	entered chan struct{}
}

func start(t *testing.T, store journal.Store, opts *idempotency.Options) *app {
	return startWith(t, store, opts)
}

// startWith is start with handlers mounted before the middleware, and
// three routes more: /v1/echo/:id answers the request's id, body and key,
// /v1/stream streams its answer, and /v1/decline returns an error.
func startWith(t *testing.T, store journal.Store, opts *idempotency.Options, before ...fiber.Handler) *app {
	t.Helper()
	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{}
	f := fiber.New()
	f.Use(recover.New())
	for _, h := range before {
		f.Use(h)
	}
	f.Use(fiberonce.New(m))
	f.Post("/v1/echo/:id", func(c fiber.Ctx) error {
		a.effects.Add(1)
		c.Set("X-Key", c.Get("Idempotency-Key"))
		c.Response().Header.Add("Vary", "Accept")
		c.Response().Header.Add("Vary", "Origin")
		return c.SendString(c.Params("id") + " " + string(c.Body()))
	})
	f.Post("/v1/stream", func(c fiber.Ctx) error {
		a.effects.Add(1)
		return c.SendStreamWriter(func(w *bufio.Writer) {
			for i := range 3 {
				fmt.Fprintf(w, "part %d\n", i)
				w.Flush()
			}
		})
	})
	f.Post("/v1/decline", func(c fiber.Ctx) error {
		a.effects.Add(1)
		return fiber.NewError(http.StatusPaymentRequired, "card declined")
	})
	f.Post("/v1/charges/:id", func(c fiber.Ctx) error {
		n := a.effects.Add(1)
		if a.gate != nil {
			a.entered <- struct{}{}
			<-a.gate
		}
		if string(c.Body()) == `{"panic":true}` {
			panic("card network down")
		}
		c.Set("Content-Type", "application/json")
		c.Location("/v1/charges/" + c.Params("id"))
		c.Status(http.StatusCreated)
		return c.SendString(`{"id":"` + c.Params("id") + `","n":` + itoa(n) + `}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	t.Cleanup(func() { f.Shutdown() })
	a.base = "http://" + ln.Addr().String()
	return a
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

type answer struct {
	status int
	header http.Header
	body   string
}

func post(t *testing.T, url, key, body string) answer {
	t.Helper()
	a, err := send(url, body, "Idempotency-Key", key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// send posts a JSON body with the headers hdr (name, value, …), one
// without a value left out; it may run outside the test's goroutine.
func send(url, body string, hdr ...string) (answer, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] != "" {
			req.Header.Add(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}, err
}

func TestReplay(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			key := uuid.NewString()
			first := post(t, a.base+"/v1/charges/ch_1", key, `{"amount":4900}`)
			again := post(t, a.base+"/v1/charges/ch_1", key, `{ "amount": 4900 }`)
			if first.status != 201 || first.header.Get("Location") != "/v1/charges/ch_1" {
				t.Fatalf("first = %d %v %s; want 201 with its Location", first.status, first.header, first.body)
			}
			if again.status != first.status || again.body != first.body ||
				again.header.Get("Content-Type") != first.header.Get("Content-Type") || again.header.Get("Location") != "/v1/charges/ch_1" {
				t.Errorf("replay = %d %v %q; want %d %q", again.status, again.header, again.body, first.status, first.body)
			}
			if got := again.header.Get("Idempotent-Replayed"); got != "true" {
				t.Errorf("replay's Idempotent-Replayed = %q; want true", got)
			}
			if got := first.header.Get("Idempotent-Replayed"); got != "" {
				t.Errorf("first answer's Idempotent-Replayed = %q; want none", got)
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}

func TestOtherBody(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			key := uuid.NewString()
			post(t, a.base+"/v1/charges/ch_1", key, `{"amount":100}`)
			got := post(t, a.base+"/v1/charges/ch_1", key, `{"amount":999900}`)
			if got.status != 422 || !strings.HasPrefix(got.header.Get("Content-Type"), "application/problem+json") {
				t.Errorf("same key, other body = %d %s %s; want 422 problem+json", got.status, got.header.Get("Content-Type"), got.body)
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}

// The scope is the Fiber route pattern, not the raw path: requests to two
// ids of one route are recorded under the tool "POST /v1/charges/:id", as
// on a ServeMux pattern; the path is in the fingerprint, so the same key
// sent to the other id is another request under that key (422), as
// idempotency answers on net/http, and the handler runs once.
func TestRouteScope(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			k1, k2 := uuid.NewString(), uuid.NewString()
			post(t, a.base+"/v1/charges/ch_1", k1, `{"amount":1}`)
			post(t, a.base+"/v1/charges/ch_2", k2, `{"amount":1}`)
			tools := map[string]int{}
			for r, err := range s.List(context.Background(), journal.Filter{}) {
				if err != nil {
					t.Fatal(err)
				}
				tools[r.Intent.Tool]++
			}
			if tools["POST /v1/charges/:id"] != 2 || len(tools) != 1 {
				t.Errorf("tools = %v; want both under POST /v1/charges/:id", tools)
			}
			if got := post(t, a.base+"/v1/charges/ch_2", k1, `{"amount":1}`); got.status != 422 {
				t.Errorf("key of ch_1 sent to ch_2 = %d %s; want 422", got.status, got.body)
			}
			if n := a.effects.Load(); n != 2 {
				t.Errorf("effects = %d; want 2", n)
			}
		})
	}
}

func TestConcurrentDuplicate(t *testing.T) {
	for name, s := range stores(t) {
		for _, wait := range []time.Duration{0, time.Minute} {
			t.Run(name+"/wait="+wait.String(), func(t *testing.T) {
				a := start(t, s, &idempotency.Options{Wait: wait})
				a.gate, a.entered = make(chan struct{}), make(chan struct{}, 1)
				key := uuid.NewString()
				var first answer
				var wg sync.WaitGroup
				wg.Go(func() { first = post(t, a.base+"/v1/charges/ch_1", key, `{"amount":1}`) })
				<-a.entered
				if wait == 0 {
					dup := post(t, a.base+"/v1/charges/ch_1", key, `{"amount":1}`)
					close(a.gate)
					wg.Wait()
					if dup.status != 409 || dup.header.Get("Retry-After") == "" {
						t.Errorf("duplicate in flight = %d Retry-After=%q %s; want 409 with Retry-After", dup.status, dup.header.Get("Retry-After"), dup.body)
					}
				} else {
					var dup answer
					wg.Go(func() { dup = post(t, a.base+"/v1/charges/ch_1", key, `{"amount":1}`) })
					// The duplicate waits; release the first once it has
					// had time to arrive (its arrival is not observable
					// from here, and a late one is a replay: same answer).
					time.Sleep(100 * time.Millisecond)
					close(a.gate)
					wg.Wait()
					if dup.status != first.status || dup.body != first.body {
						t.Errorf("waiting duplicate = %d %s; want the first's %d %s", dup.status, dup.body, first.status, first.body)
					}
				}
				if n := a.effects.Load(); n != 1 {
					t.Errorf("effects = %d; want 1", n)
				}
			})
		}
	}
}

func TestPanic(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			key := uuid.NewString()
			first := post(t, a.base+"/v1/charges/ch_1", key, `{"panic":true}`)
			retry := post(t, a.base+"/v1/charges/ch_1", key, `{"panic":true}`)
			if first.status != 500 {
				t.Errorf("panicking handler = %d %s; want 500", first.status, first.body)
			}
			if retry.status != 500 || !strings.Contains(retry.body, "unknown") {
				t.Errorf("retry after a panic = %d %s; want 500 outcome-unknown", retry.status, retry.body)
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1 (no silent second run)", n)
			}
		})
	}
}

// A replay is written into Fiber's response as the net/http path writes
// it: the stored headers replace what a middleware before this one set
// for their names (Vary), its other headers stay, a name's values stay
// several, and Content-Length is the body's.
func TestReplayHeaders(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			edge := func(c fiber.Ctx) error {
				c.Set("X-Edge", "1")
				c.Set("Vary", "Cookie")
				return c.Next()
			}
			a := startWith(t, s, &idempotency.Options{StoredHeaders: []string{"X-Key"}}, edge)
			key := uuid.NewString()
			first := post(t, a.base+"/v1/echo/e1", key, `{"amount":1}`)
			again := post(t, a.base+"/v1/echo/e1", key, `{"amount":1}`)
			for i, got := range []answer{first, again} {
				if got.status != 200 || got.body != `e1 {"amount":1}` || got.header.Get("X-Key") != key || got.header.Get("X-Edge") != "1" ||
					!slices.Equal(got.header.Values("Vary"), []string{"Cookie", "Accept", "Origin"}) || got.header.Get("Content-Length") != strconv.Itoa(len(got.body)) {
					t.Errorf("answer %d = %d %v %q; want 200 %q with X-Key, X-Edge, Vary Cookie, Accept, Origin and its length", i, got.status, got.header, got.body, `e1 {"amount":1}`)
				}
			}
			if first.header.Get("Idempotent-Replayed") != "" || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("Idempotent-Replayed = %q then %q; want none then true", first.header.Get("Idempotent-Replayed"), again.header.Get("Idempotent-Replayed"))
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}

// The Options' functions see the request as net/http would hand it over:
// its method, path and query, Host, the peer's address, its headers, and
// the context a middleware before this one set on the Fiber ctx. The
// tenant scopes the key.
func TestRequestView(t *testing.T) {
	type ctxKey struct{}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var views []string
			var a *app
			opts := &idempotency.Options{Tenant: func(r *http.Request) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				views = append(views, fmt.Sprintf("%s %s?%s host=%t peer=%t ctx=%v ua=%s", r.Method, r.URL.Path, r.URL.RawQuery,
					"http://"+r.Host == a.base, strings.HasPrefix(r.RemoteAddr, "127.0.0.1:"), r.Context().Value(ctxKey{}), r.Header.Get("User-Agent")))
				return r.Header.Get("X-Tenant"), nil
			}}
			withCtx := func(c fiber.Ctx) error {
				c.SetContext(context.WithValue(c.Context(), ctxKey{}, "set before"))
				return c.Next()
			}
			a = startWith(t, s, opts, withCtx)
			key := uuid.NewString()
			for _, tenant := range []string{"acme", "globex", "acme"} {
				if got, err := send(a.base+"/v1/echo/e1?x=1", "{}", "Idempotency-Key", key, "X-Tenant", tenant); err != nil || got.status != 200 {
					t.Fatalf("%s: %d %s %v", tenant, got.status, got.body, err)
				}
			}
			want := "POST /v1/echo/e1?x=1 host=true peer=true ctx=set before ua=Go-http-client/1.1"
			if len(views) != 3 || views[0] != want {
				t.Errorf("the Tenant function saw %q; want 3 times %q", views, want)
			}
			tenants := map[string]int{}
			for r, err := range s.List(context.Background(), journal.Filter{}) {
				if err != nil {
					t.Fatal(err)
				}
				tenants[r.Intent.Tenant]++
			}
			if n := a.effects.Load(); n != 2 || tenants["acme"] != 1 || tenants["globex"] != 1 {
				t.Errorf("effects = %d, records by tenant %v; want 2, one each for acme and globex", n, tenants)
			}
		})
	}
}

// A request without a key where Options.Require says one is needed gets
// 400 and does not run.
func TestRequired(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, &idempotency.Options{Require: func(r *http.Request) bool { return true }})
			got, err := send(a.base+"/v1/charges/ch_1", `{"amount":1}`)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != 400 || !strings.Contains(got.body, idempotency.ProblemKeyRequired) {
				t.Errorf("no key = %d %s; want 400 %s", got.status, got.body, idempotency.ProblemKeyRequired)
			}
			if n := a.effects.Load(); n != 0 {
				t.Errorf("effects = %d; want 0", n)
			}
		})
	}
}

// A request that passes through (no key) gets the chain's answer as the
// chain wrote it, a streamed one included; with a key, a streamed answer
// is buffered, recorded and replayed.
func TestPassThrough(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			const streamed = "part 0\npart 1\npart 2\n"
			got, err := send(a.base+"/v1/stream", "{}")
			if err != nil || got.status != 200 || got.body != streamed {
				t.Errorf("stream without a key = %d %q %v; want 200 %q", got.status, got.body, err, streamed)
			}
			got, err = send(a.base+"/v1/echo/e1", "{}")
			if err != nil || got.status != 200 || got.body != "e1 {}" || !slices.Equal(got.header.Values("Vary"), []string{"Accept", "Origin"}) {
				t.Errorf("echo without a key = %d %v %q %v; want 200 \"e1 {}\" with Vary Accept, Origin", got.status, got.header, got.body, err)
			}
			key := uuid.NewString()
			first := post(t, a.base+"/v1/stream", key, "{}")
			again := post(t, a.base+"/v1/stream", key, "{}")
			if first.body != streamed || again.body != streamed || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("stream with a key = %q then %q (replayed %q); want %q twice, replayed the second time", first.body, again.body, again.header.Get("Idempotent-Replayed"), streamed)
			}
			if n := a.effects.Load(); n != 3 {
				t.Errorf("effects = %d; want 3", n)
			}
		})
	}
}

// An error the handler returns is answered by the app's error handler,
// and that answer is the one recorded and replayed.
func TestErrorHandler(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			key := uuid.NewString()
			first := post(t, a.base+"/v1/decline", key, "{}")
			again := post(t, a.base+"/v1/decline", key, "{}")
			if first.status != 402 || first.body != "card declined" || again.status != 402 || again.body != first.body ||
				again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("declined = %d %q, then %d %q replayed %q; want 402 \"card declined\" twice, replayed the second time",
					first.status, first.body, again.status, again.body, again.header.Get("Idempotent-Replayed"))
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}

// A path with escapes is scoped and fingerprinted as net/http reads it:
// the retry is replayed, the key sent to another id gets 422.
func TestEscapedPath(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, nil)
			key := uuid.NewString()
			first := post(t, a.base+"/v1/charges/ch%201", key, `{"amount":1}`)
			again := post(t, a.base+"/v1/charges/ch%201", key, `{"amount":1}`)
			other := post(t, a.base+"/v1/charges/ch%202", key, `{"amount":1}`)
			if first.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" || other.status != 422 {
				t.Errorf("escaped path = %d %q, replay %q (replayed %q), other id %d; want 201, the same body replayed, 422",
					first.status, first.body, again.body, again.header.Get("Idempotent-Replayed"), other.status)
			}
			if n := a.effects.Load(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
		})
	}
}

// Many clients at once, each with keys of its own: every answer, first or
// replayed, is its own request's (its id, body and key), and each key
// runs once.
func TestHammer(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			a := start(t, s, &idempotency.Options{StoredHeaders: []string{"X-Key"}})
			const clients, keys = 8, 20
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					for j := range keys {
						id, key, body := fmt.Sprintf("c%d-%d", i, j), uuid.NewString(), fmt.Sprintf(`{"n":%d}`, j)
						for try := range 2 {
							got, err := send(a.base+"/v1/echo/"+id, body, "Idempotency-Key", key)
							if err != nil {
								t.Error(err)
								return
							}
							if got.status != 200 || got.body != id+" "+body || got.header.Get("X-Key") != key ||
								(got.header.Get("Idempotent-Replayed") == "true") != (try == 1) {
								t.Errorf("%s try %d = %d %v %q; want 200 %q with X-Key %s", id, try, got.status, got.header, got.body, id+" "+body, key)
							}
						}
					}
				})
			}
			wg.Wait()
			if n := a.effects.Load(); n != clients*keys {
				t.Errorf("effects = %d; want %d", n, clients*keys)
			}
		})
	}
}

// Under Options.InTx the handler reaches the journal's transaction through
// c.Context() (bolt.TxFrom), writes through it, and the write commits with
// the recorded answer: a second key's handler reads it back, and a retry of
// the first replays without running the handler again.
func TestInTxReachesTheHandler(t *testing.T) {
	store, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "server.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, &idempotency.Options{InTx: true})
	if err != nil {
		t.Fatal(err)
	}
	var effects atomic.Int64
	f := fiber.New()
	f.Use(recover.New())
	f.Use(fiberonce.New(m))
	f.Post("/v1/credits", func(c fiber.Ctx) error {
		tx, ok := bolt.TxFrom(c.Context())
		if !ok {
			return fiber.NewError(fiber.StatusInternalServerError, "no journal transaction in the handler's context")
		}
		b, err := tx.CreateBucketIfNotExists([]byte("credits"))
		if err != nil {
			return err
		}
		n := len(b.Get([]byte("n")))
		if err := b.Put([]byte("n"), append(b.Get([]byte("n")), 'x')); err != nil {
			return err
		}
		effects.Add(1)
		return c.SendString("credits before: " + strconv.Itoa(n))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	defer f.Shutdown()
	send := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/credits", strings.NewReader(`{"amount":5}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct{ key, want string }{
		{"k1", "credits before: 0"}, {"k1", "credits before: 0"}, {"k2", "credits before: 1"},
	} {
		if st, body := send(c.key); st != http.StatusOK || body != c.want {
			t.Errorf("key %s: %d %q; want 200 %q", c.key, st, body, c.want)
		}
	}
	if n := effects.Load(); n != 2 {
		t.Errorf("handler ran %d times; want 2 (one a key)", n)
	}
}

// The key reaches the middleware's parser as Fiber received it: an empty
// header, a list, a key on two lines is a 400 and runs nothing; a
// quoted key with parameters is the key.
func TestKeyHeader(t *testing.T) {
	a := start(t, stores(t)["bolt"], nil)
	for _, tc := range []struct {
		keys   []string
		status int
	}{
		{[]string{""}, 400},
		{[]string{"a, b"}, 400},
		{[]string{"a b"}, 400},
		{[]string{"k1", "k2"}, 400},
		{[]string{`"k1";p=1`}, 201},
		{[]string{"k1"}, 201},
	} {
		req, err := http.NewRequest("POST", a.base+"/v1/charges/ch_1", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = tc.keys
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Idempotency-Key %q = %d %s; want %d", tc.keys, resp.StatusCode, b, tc.status)
		}
	}
	if n := a.effects.Load(); n != 1 {
		t.Errorf("handler runs = %d; want 1", n)
	}
}
