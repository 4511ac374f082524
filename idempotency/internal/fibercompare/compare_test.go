package fibercompare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v3"
	fiberidem "github.com/gofiber/fiber/v3/middleware/idempotency"
	fiberredis "github.com/gofiber/storage/redis/v3"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal/redis"
)

const body = `{"amount":4900,"currency":"usd","customer":"cus_8812","description":"order 55102"}`

func redisURL(tb testing.TB) string {
	u := os.Getenv("AGENTONCE_REDIS_URL")
	if u == "" {
		tb.Skip("AGENTONCE_REDIS_URL is not set: the comparison needs a Redis server (e.g. redis://127.0.0.1:6399/0)")
	}
	return u
}

// servers starts both on loopback over the same Redis server and returns
// their base URLs and effect counters.
func servers(tb testing.TB) (fiberURL, agentonceURL string, fiberEffects, agentonceEffects *atomic.Int64) {
	url := redisURL(tb)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	fiberEffects, agentonceEffects = new(atomic.Int64), new(atomic.Int64)
	answer := `{"id":"ch_3Nq8ZL2eZvKYlo2C0x1a","object":"charge","status":"succeeded","amount":4900}`

	// Fiber: its middleware on its Redis storage.
	client := goredis.NewClient(opt)
	tb.Cleanup(func() { client.Close() })
	app := fiber.New()
	app.Use(fiberidem.New(fiberidem.Config{
		Storage:   fiberredis.NewFromConnection(client),
		KeyHeader: "Idempotency-Key",
	}))
	app.Post("/v1/charges", func(c fiber.Ctx) error {
		fiberEffects.Add(1)
		c.Set("Content-Type", "application/json")
		return c.SendString(answer)
	})
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(fln, fiber.ListenConfig{DisableStartupMessage: true})
	tb.Cleanup(func() { app.Shutdown() })

	// agentonce: the middleware on journal/redis, under a prefix of its own.
	var b [6]byte
	_, _ = rand.Read(b[:])
	store, err := redis.Open(context.Background(), url, &redis.Options{Prefix: "agentonce-cmp-" + hex.EncodeToString(b[:]) + ":"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	m, err := idempotency.New(store, nil)
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agentonceEffects.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})))
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(aln)
	tb.Cleanup(func() { srv.Close() })
	return "http://" + fln.Addr().String(), "http://" + aln.Addr().String(), fiberEffects, agentonceEffects
}

func post(tb testing.TB, base, key, payload string) (int, string) {
	req, _ := http.NewRequest("POST", base+"/v1/charges", strings.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// What each does with the same key and another payload: Fiber replays the
// first answer (it keeps no fingerprint: the second charge is silently
// answered with the first); agentonce refuses with 422.
func TestReusedKey(t *testing.T) {
	f, a, _, _ := servers(t)
	for _, c := range []struct {
		name, base string
		want       int
	}{{"fiber", f, 200}, {"agentonce", a, 422}} {
		key := uuid.NewString()
		post(t, c.base, key, `{"amount":100}`)
		if st, b := post(t, c.base, key, `{"amount":999900}`); st != c.want {
			t.Errorf("%s: same key, other amount = %d %s; want %d", c.name, st, b, c.want)
		}
	}
}

// BenchmarkCompare: requests per second through a real loopback client,
// sequential, on the same Redis server. baseline is Fiber's middleware.
func BenchmarkCompare(b *testing.B) {
	f, a, _, _ := servers(b)
	for _, kind := range []string{"new-key", "replay"} {
		for _, side := range []struct{ name, base string }{{"baseline", f}, {"agentonce", a}} {
			b.Run(kind+"/"+side.name, func(b *testing.B) {
				key := uuid.NewString()
				post(b, side.base, key, body)
				b.ReportAllocs()
				for b.Loop() {
					if kind == "new-key" {
						key = uuid.NewString()
					}
					if st, resp := post(b, side.base, key, body); st != 200 {
						b.Fatalf("%d %s", st, resp)
					}
				}
			})
		}
	}
}
