package redis_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/idempotency"
)

// The idempotency middleware on a Redis journal: many clients with one
// key run the handler once and get one answer; another payload gets 422; a
// panic leaves the key unknown, not run again.
func TestIdempotencyMiddleware(t *testing.T) {
	c := client(t)
	store := openStore(t, c, prefix(t, c), nil)
	defer store.Close()
	m, err := idempotency.New(store, &idempotency.Options{Wait: time.Minute, ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var effects atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := effects.Add(1)
		if r.Header.Get("X-Panic") != "" {
			panic("after the effect")
		}
		fmt.Fprintf(w, `{"id":"ch_%d"}`, n)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(key, body string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/charges", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, b := post("k1", `{"amount":1}`)
			mu.Lock()
			answers[fmt.Sprint(st, " ", b)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(answers) != 1 || effects.Load() != 1 {
		t.Errorf("16 clients, one key: answers %v, effects %d; want one answer, 1 effect", answers, effects.Load())
	}
	if st, _ := post("k1", `{"amount":2}`); st != 422 {
		t.Errorf("other payload = %d; want 422", st)
	}
	post("k2", `{}`, "X-Panic", "1")
	if st, b := post("k2", `{}`); st != 500 || !strings.Contains(b, idempotency.ProblemOutcomeUnknown) {
		t.Errorf("after a panic = %d %s; want 500 outcome-unknown", st, b)
	}
	if effects.Load() != 2 {
		t.Errorf("effects = %d; want 2", effects.Load())
	}
}
