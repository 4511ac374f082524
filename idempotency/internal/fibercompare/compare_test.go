package fibercompare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	fiberidem "github.com/gofiber/fiber/v3/middleware/idempotency"
	fiberredis "github.com/gofiber/storage/redis/v3"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	fiberonce "github.com/agentonce/agentonce/adapters/fiber"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
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

// side is one middleware on loopback: its base URL, its handler's effect
// count, and what its Redis client sent.
type side struct {
	name    string
	base    string
	effects *atomic.Int64
	trips   *trips
	// peer, when set, is a second server of the side on the same journal
	// (another process behind the same load balancer): a key it answered
	// is one base has not seen.
	peer string
}

// serversWithFloor starts the sides on loopback over the same Redis
// server, each on a client of its own whose round trips are counted:
// Fiber's middleware, the baseline; agentonce on net/http; the floor of a
// replay on net/http, a bare handler that answers every request with one
// Redis GET of a stored answer, no middleware; and agentonce mounted on
// Fiber (adapters/fiber) with a journal of its own, and a peer.
func serversWithFloor(tb testing.TB) (baseline, agentonce, floor, onFiber side) {
	url := redisURL(tb)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	newClient := func(t *trips) *goredis.Client {
		c := goredis.NewClient(opt)
		c.AddHook(t)
		tb.Cleanup(func() { c.Close() })
		return c
	}
	baseline = side{name: "baseline", effects: new(atomic.Int64), trips: new(trips)}
	agentonce = side{name: "agentonce", effects: new(atomic.Int64), trips: new(trips)}
	answer := `{"id":"ch_3Nq8ZL2eZvKYlo2C0x1a","object":"charge","status":"succeeded","amount":4900}`

	// Fiber: its middleware on its Redis storage.
	app := fiber.New()
	app.Use(fiberidem.New(fiberidem.Config{
		Storage:   fiberredis.NewFromConnection(newClient(baseline.trips)),
		KeyHeader: "Idempotency-Key",
	}))
	app.Post("/v1/charges", func(c fiber.Ctx) error {
		baseline.effects.Add(1)
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
	store, err := redis.New(context.Background(), newClient(agentonce.trips), &redis.Options{Prefix: "agentonce-cmp-" + hex.EncodeToString(b[:]) + ":"})
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
		agentonce.effects.Add(1)
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
	baseline.base = "http://" + fln.Addr().String()
	agentonce.base = "http://" + aln.Addr().String()

	onFiber = side{name: "agentonce-fiber", effects: new(atomic.Int64), trips: new(trips)}
	ostore, err := redis.New(context.Background(), newClient(onFiber.trips), &redis.Options{Prefix: "agentonce-cmp-fiber-" + hex.EncodeToString(b[:]) + ":"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ostore.Close() })
	// Two servers on the one journal: the side's, and its peer.
	onFiber.base = serveOnFiber(tb, ostore, onFiber.effects, answer)
	onFiber.peer = serveOnFiber(tb, ostore, onFiber.effects, answer)

	floor = side{name: "nethttp-get", effects: new(atomic.Int64), trips: new(trips)}
	fc := newClient(floor.trips)
	floorKey := "agentonce-cmp-floor-" + hex.EncodeToString(b[:])
	if err := fc.Set(context.Background(), floorKey, answer, 0).Err(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fc.Del(context.Background(), floorKey) })
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	fsrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := fc.Get(r.Context(), floorKey).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(v)
	})}
	go fsrv.Serve(fl)
	tb.Cleanup(func() { fsrv.Close() })
	floor.base = "http://" + fl.Addr().String()
	// Run first (cleanups run last in, first out): a Fiber app's Shutdown
	// waits for every open connection, and the client keeps its idle ones
	// open without a timeout, so that Shutdown could wait for ever.
	tb.Cleanup(client.CloseIdleConnections)
	return baseline, agentonce, floor, onFiber
}

// serveOnFiber starts a Fiber app on loopback whose charges handler, under
// a Middleware of its own on store, counts its runs in effects and answers
// answer; it returns the app's base URL.
func serveOnFiber(tb testing.TB, store journal.Store, effects *atomic.Int64, answer string) string {
	m, err := idempotency.New(store, nil)
	if err != nil {
		tb.Fatal(err)
	}
	app := fiber.New()
	app.Use(fiberonce.New(m))
	app.Post("/v1/charges", func(c fiber.Ctx) error {
		effects.Add(1)
		c.Set("Content-Type", "application/json")
		return c.SendString(answer)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	tb.Cleanup(func() { app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// client is the loopback client of both sides; it keeps enough idle
// connections for the parallel benchmarks, so that neither side pays for
// new TCP connections (http.DefaultTransport keeps two per host).
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// post sends a charge with key and returns the answer's status and body.
func post(tb testing.TB, base, key, payload string) (int, string) {
	st, b, err := send(base, key, payload)
	if err != nil {
		tb.Fatal(err)
	}
	return st, b
}

// send is post for a goroutine other than the test's.
func send(base, key, payload string) (int, string, error) {
	req, err := http.NewRequest("POST", base+"/v1/charges", strings.NewReader(payload))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// What each does with the same key and another payload: Fiber replays the
// first answer (it keeps no fingerprint: the second charge is silently
// answered with the first); agentonce refuses with 422.
func TestReusedKey(t *testing.T) {
	f, a, _, of := serversWithFloor(t)
	for _, c := range []struct {
		side side
		want int
	}{{f, 200}, {a, 422}, {of, 422}} {
		key := uuid.NewString()
		post(t, c.side.base, key, `{"amount":100}`)
		if st, b := post(t, c.side.base, key, `{"amount":999900}`); st != c.want {
			t.Errorf("%s: same key, other amount = %d %s; want %d", c.side.name, st, b, c.want)
		}
	}
}

// reportTrips reports the Redis round trips and writes per request that
// s's client sent since before (from snapshot).
func reportTrips(b *testing.B, s side, beforeTrips, beforeWrites int64) {
	t, w := s.trips.snapshot()
	b.ReportMetric(float64(t-beforeTrips)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(w-beforeWrites)/float64(b.N), "writes/op")
}

// BenchmarkCompare: one request at a time through a real loopback client,
// on the same Redis server; baseline is Fiber's middleware. new-key sends
// a key never seen (the handler runs); replay sends one key again (the
// first answer is replayed). ns/op is the latency of one request;
// roundtrips/op and writes/op are what the middleware sent to Redis for
// it. replay/nethttp-get is the floor of any net/http middleware on Redis:
// a bare handler that makes one GET. A retry to the server that answered
// is answered from that Middleware's memory; replay-elsewhere is the retry
// that reaches another server on the journal (one Redis round trip), each
// key answered first by the side's peer (replayElsewhere). Fiber's
// middleware has no memory of its own, so its replay is its
// replay-elsewhere.
func BenchmarkCompare(b *testing.B) {
	f, a, fl, of := serversWithFloor(b)
	for _, kind := range []string{"new-key", "replay", "replay-elsewhere"} {
		sides := []side{f, of, a}
		switch kind {
		case "replay":
			sides = append(sides, fl)
		case "replay-elsewhere":
			sides = []side{of}
		}
		for _, s := range sides {
			b.Run(kind+"/"+s.name, func(b *testing.B) {
				if kind == "replay-elsewhere" {
					replayElsewhere(b, s)
					return
				}
				key := uuid.NewString()
				post(b, s.base, key, body)
				b.ReportAllocs()
				t0, w0 := s.trips.snapshot()
				for b.Loop() {
					if kind == "new-key" {
						key = uuid.NewString()
					}
					if st, resp := post(b, s.base, key, body); st != 200 {
						b.Fatalf("%d %s", st, resp)
					}
				}
				reportTrips(b, s, t0, w0)
			})
		}
	}
}

// replayElsewhere is BenchmarkCompare's replay-elsewhere on s: b.N keys
// answered first by s's peer, before the timer starts (stopping and
// starting it per request would read the memory statistics each time,
// tens of microseconds), then each retried once on s's own server.
func replayElsewhere(b *testing.B, s side) {
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = uuid.NewString()
		post(b, s.peer, keys[i], body)
	}
	b.ReportAllocs()
	t0, w0 := s.trips.snapshot()
	b.ResetTimer()
	for _, key := range keys {
		if st, resp := post(b, s.base, key, body); st != 200 {
			b.Fatalf("%d %s", st, resp)
		}
	}
	b.StopTimer()
	reportTrips(b, s, t0, w0)
}

// clients is how many client goroutines BenchmarkCompareParallel runs
// (b.SetParallelism rounds it to a multiple of GOMAXPROCS).
const clients = 16

// BenchmarkCompareParallel: clients goroutines sending requests at once,
// on the same Redis server as BenchmarkCompare; req/s is the throughput.
// Under concurrency Redis fsyncs once for the writes of one event-loop
// iteration, so a write costs less than one fsync each. replay spreads
// the requests over 64 keys, each answered before the timer starts.
func BenchmarkCompareParallel(b *testing.B) {
	f, a, fl, of := serversWithFloor(b)
	for _, kind := range []string{"new-key", "replay"} {
		sides := []side{f, of, a}
		if kind == "replay" {
			sides = append(sides, fl)
		}
		for _, s := range sides {
			b.Run(kind+"/"+s.name, func(b *testing.B) {
				keys := make([]string, 64)
				for i := range keys {
					keys[i] = uuid.NewString()
					post(b, s.base, keys[i], body)
				}
				var next atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
				t0, w0 := s.trips.snapshot()
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := keys[next.Add(1)%int64(len(keys))]
						if kind == "new-key" {
							key = uuid.NewString()
						}
						if st, resp, err := send(s.base, key, body); err != nil || st != 200 {
							b.Errorf("%d %s %v", st, resp, err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				reportTrips(b, s, t0, w0)
			})
		}
	}
}
