package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stripe/stripe-go/v82"

	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
)

// locations runs fn with a fresh server journal on each store: a bbolt
// file, a PostgreSQL schema when AGENTONCE_PG_URL is set, a Redis key
// prefix when AGENTONCE_REDIS_URL is.
func locations(t *testing.T, fn func(t *testing.T, loc string)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, filepath.Join(t.TempDir(), "server.journal")) })
	t.Run("postgres", func(t *testing.T) {
		u := pgtest.URL(t)
		fn(t, u+"&schema="+pgtest.Schema(t, "agentonce_pay_"))
	})
	t.Run("redis", func(t *testing.T) {
		u := os.Getenv("AGENTONCE_REDIS_URL")
		if u == "" {
			t.Skip("AGENTONCE_REDIS_URL is not set: the Redis runs need a server (redis://127.0.0.1:6399/0)")
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		p := "agentonce-pay-" + hex.EncodeToString(b[:]) + ":"
		t.Cleanup(func() { dropPrefix(u, p) })
		fn(t, u+"?prefix="+p)
	})
}

// startServer runs the payment API in this process on loopback.
func startServer(t *testing.T, loc string, so serverOptions) (string, *ledger) {
	t.Helper()
	store, err := journal.Open(t.Context(), loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := openLedger(filepath.Join(t.TempDir(), "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := newServer(store, l, so)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); store.Close(); l.close() })
	return ln.Addr().String(), l
}

func proxyTo(t *testing.T, addr string) *cutProxy {
	t.Helper()
	p, err := newCutProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// stripe-go, with its own keys and retries, against the server through a
// proxy that loses every charge's first answer: each charge is made once,
// and the client gets its answer from the retry.
func TestStripeGo(t *testing.T) {
	locations(t, func(t *testing.T, loc string) {
		addr, l := startServer(t, loc, serverOptions{})
		proxy := proxyTo(t, addr)
		sc := stripe.NewClient("sk_test_proof", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
			URL: stripe.String(proxy.URL()),
			// One request per connection, so that the proxy can lose each
			// charge's first answer.
			HTTPClient:        &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
			MaxNetworkRetries: stripe.Int64(3),
			LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		})))
		const n = 4
		ids := map[string]bool{}
		for i := range n {
			proxy.cuts.Store(1)
			ch, err := sc.V1Charges.Create(t.Context(), &stripe.ChargeCreateParams{Amount: stripe.Int64(int64(1000 + i)), Currency: stripe.String("usd")})
			if err != nil {
				t.Fatalf("charge %d: %v", i, err)
			}
			if ch.Amount != int64(1000+i) || ids[ch.ID] {
				t.Errorf("charge %d = %s amount %d; want a new charge of %d", i, ch.ID, ch.Amount, 1000+i)
			}
			ids[ch.ID] = true
		}
		// The same key with another amount: stripe-go reports the 422.
		params := &stripe.ChargeCreateParams{Amount: stripe.Int64(1), Currency: stripe.String("usd")}
		params.SetIdempotencyKey("fixed-key")
		if _, err := sc.V1Charges.Create(t.Context(), params); err != nil {
			t.Fatal(err)
		}
		params.Amount = stripe.Int64(2)
		// stripe-go does not retry it, and reports the problem body as it
		// came (it is not Stripe's error shape, so no *stripe.Error fields).
		if _, err := sc.V1Charges.Create(t.Context(), params); err == nil || !strings.Contains(err.Error(), "key-reused") {
			t.Errorf("same key, other amount: %v; want the 422 key-reused problem", err)
		}
		charges, dups := l.counts()
		if charges != n+1 || dups != 0 || proxy.cut.Load() != n {
			t.Errorf("charges %d, duplicates %d, answers lost %d; want %d, 0, %d", charges, dups, proxy.cut.Load(), n+1, n)
		}
	})
}

// retryingPost is a plain HTTP client with retries, as a team would write
// one: the same key on every try; retry on a network error, 409 or 5xx.
func retryingPost(ctx context.Context, base, key, body string) (int, string, error) {
	var last error
	wait := 20 * time.Millisecond
	for range 20 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/charges", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer sk_test_plain")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 409 && resp.StatusCode < 500 {
				return resp.StatusCode, string(b), nil
			}
			last = fmt.Errorf("%d %s", resp.StatusCode, b)
		} else {
			last = err
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
	return 0, "", fmt.Errorf("gave up: %w", last)
}

// A plain retrying client under lost answers and a slow handler, many at
// once on the same keys: one charge per key, one answer per key.
func TestPlainRetryingClient(t *testing.T) {
	locations(t, func(t *testing.T, loc string) {
		addr, l := startServer(t, loc, serverOptions{slow: func() { time.Sleep(50 * time.Millisecond) }})
		proxy := proxyTo(t, addr)
		proxy.cuts.Store(3)
		const keys, clients = 4, 6
		var mu sync.Mutex
		answers := map[string]map[string]bool{}
		var wg sync.WaitGroup
		for k := range keys {
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("order-%d", k)
					st, b, err := retryingPost(t.Context(), proxy.URL(), key, url.Values{"amount": {fmt.Sprint(100 + k)}, "currency": {"usd"}}.Encode())
					if err != nil || st != 200 {
						t.Errorf("key %s: %d %v", key, st, err)
						return
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
		charges, dups := l.counts()
		if charges != keys || dups != 0 {
			t.Errorf("charges %d, duplicates %d; want %d, 0", charges, dups, keys)
		}
		for k, a := range answers {
			if len(a) != 1 {
				t.Errorf("key %s: %d different answers; want 1", k, len(a))
			}
		}
	})
}

// The demo: a harness agent's Keyed tool through downstream.Transport, the
// answers lost, each charge made once.
func TestDemoHarnessTransport(t *testing.T) {
	locations(t, func(t *testing.T, loc string) {
		sum, err := demo(t.Context(), t.TempDir(), loc, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Charges != 3 || sum.Duplicates != 0 || sum.Lost != 2 || sum.Replayed < 1 {
			t.Errorf("demo = %+v; want 3 charges, 0 duplicates, 2 answers lost, at least 1 replayed", sum)
		}
	})
}

// serverProcess is the payment server in a real subprocess: this test
// binary, re-executed into serveMain (see TestServerProcess).
type serverProcess struct {
	cmd  *exec.Cmd
	base string
}

func startProcess(t *testing.T, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerProcess$")
	cmd.Env = append(os.Environ(), "PAYMENT_SERVER_ARGS="+strings.Join(append([]string{"-addr", "127.0.0.1:0"}, args...), "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("server process: %q %v", line, err)
	}
	p := &serverProcess{cmd: cmd, base: base}
	t.Cleanup(p.kill)
	return p
}

// kill sends SIGKILL and reaps the process.
func (p *serverProcess) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// TestServerProcess is the subprocess of the SIGKILL test; without its
// environment variable it does nothing.
func TestServerProcess(t *testing.T) {
	args := os.Getenv("PAYMENT_SERVER_ARGS")
	if args == "" {
		t.Skip("the payment server subprocess of TestSIGKILL")
	}
	err := serveMain(context.Background(), strings.Split(args, "\x1f"))
	fmt.Fprintln(os.Stderr, "serve:", err)
	os.Exit(1)
}

func ledgerLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// SIGKILL of the server, twice: once between the charge's commit and its
// answer (the retry on the restarted server is told the outcome is
// unknown, and nothing is charged again), once after an answer (the retry
// on the restarted server gets it again from the journal).
func TestSIGKILL(t *testing.T) {
	locations(t, func(t *testing.T, loc string) {
		dir := t.TempDir()
		ledgerPath := filepath.Join(dir, "ledger")
		args := []string{"-journal", loc, "-ledger", ledgerPath, "-lease", "1s"}
		form := url.Values{"amount": {"4900"}, "currency": {"usd"}}.Encode()

		a := startProcess(t, append(args, "-slow", "1h")...)
		go retryingPost(context.Background(), a.base, "order-1", form) // its answer never comes
		for ledgerLines(t, ledgerPath) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		a.kill() // the charge is committed, its answer not sent, the journal says pending

		b := startProcess(t, args...)
		st, body, err := retryingPost(t.Context(), b.base, "order-1", form)
		if err == nil || !strings.Contains(err.Error(), "outcome-unknown") {
			t.Errorf("retry after SIGKILL mid-request = %d %s %v; want 500 outcome-unknown", st, body, err)
		}
		st, first, err := retryingPost(t.Context(), b.base, "order-2", form)
		if err != nil || st != 200 {
			t.Fatalf("order-2: %d %v", st, err)
		}
		b.kill()

		c := startProcess(t, args...)
		if st, again, err := retryingPost(t.Context(), c.base, "order-2", form); err != nil || st != 200 || again != first {
			t.Errorf("order-2 after SIGKILL = %d %q %v; want the first answer %q", st, again, err, first)
		}
		if n := ledgerLines(t, ledgerPath); n != 2 {
			t.Errorf("charges = %d; want 2 (order-1 once, order-2 once)", n)
		}
	})
}

// dropPrefix deletes a test's Redis keys.
func dropPrefix(url, p string) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return
	}
	c := goredis.NewClient(o)
	defer c.Close()
	ctx := context.Background()
	it := c.Scan(ctx, 0, "{"+p+"}:*", 512).Iterator()
	for it.Next(ctx) {
		c.Del(ctx, it.Val())
	}
}
