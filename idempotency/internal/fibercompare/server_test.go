package fibercompare

import (
	"context"
	"net"
	"testing"

	"github.com/gofiber/fiber/v3"
	fiberidem "github.com/gofiber/fiber/v3/middleware/idempotency"
	fiberredis "github.com/gofiber/storage/redis/v3"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	fiberonce "github.com/agentonce/agentonce/adapters/fiber"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal/redis"
)

// BenchmarkServerReplay is a replay's cost on the server alone: each
// Fiber app's handler is called in process on one reused
// fasthttp.RequestCtx, as fasthttp's server reuses it, with no HTTP client
// and no socket but Redis's. baseline is Fiber's middleware, agentonce-fiber
// adapters/fiber; both sides run twice, alternately, so that a drift of
// the machine's load shows as a difference between a side's two runs.
// allocs/op and B/op are the server's own, and ns/op is one Redis GET and
// the middleware's CPU.
func BenchmarkServerReplay(b *testing.B) {
	opt, err := goredis.ParseURL(redisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	newClient := func() *goredis.Client {
		c := goredis.NewClient(opt)
		b.Cleanup(func() { c.Close() })
		return c
	}
	answer := `{"id":"ch_3Nq8ZL2eZvKYlo2C0x1a","object":"charge","status":"succeeded","amount":4900}`
	charge := func(c fiber.Ctx) error {
		c.Set("Content-Type", "application/json")
		return c.SendString(answer)
	}
	baseline := fiber.New()
	baseline.Use(fiberidem.New(fiberidem.Config{Storage: fiberredis.NewFromConnection(newClient()), KeyHeader: "Idempotency-Key"}))
	baseline.Post("/v1/charges", charge)
	store, err := redis.New(context.Background(), newClient(), &redis.Options{Prefix: "agentonce-cmp-server-" + uuid.NewString() + ":"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	m, err := idempotency.New(store, nil)
	if err != nil {
		b.Fatal(err)
	}
	onFiber := fiber.New()
	onFiber.Use(fiberonce.New(m))
	onFiber.Post("/v1/charges", charge)

	for _, s := range []struct {
		name string
		app  *fiber.App
	}{{"baseline", baseline}, {"agentonce-fiber", onFiber}, {"baseline", baseline}, {"agentonce-fiber", onFiber}} {
		b.Run(s.name, func(b *testing.B) {
			handle, key := s.app.Handler(), uuid.NewString()
			var fc fasthttp.RequestCtx
			fc.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}, nil)
			send := func() {
				req := &fc.Request
				req.Reset()
				fc.Response.Reset()
				fc.ResetUserValues()
				req.Header.SetMethod(fiber.MethodPost)
				req.SetRequestURI("/v1/charges")
				req.Header.Set("Host", "127.0.0.1:8080")
				req.Header.Set("User-Agent", "Go-http-client/1.1")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				req.SetBodyString(body)
				handle(&fc)
				if st := fc.Response.StatusCode(); st != 200 {
					b.Fatalf("%d %s", st, fc.Response.Body())
				}
			}
			send() // the first: the key's answer is recorded
			b.ReportAllocs()
			for b.Loop() {
				send()
			}
		})
	}
}
