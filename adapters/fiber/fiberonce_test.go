package fiberonce_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
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
	t.Helper()
	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{}
	f := fiber.New()
	f.Use(recover.New())
	f.Use(fiberonce.New(m))
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
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
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
