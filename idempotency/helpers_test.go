package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
	"github.com/agentonce/agentonce/journal/postgres"
)

// stores runs fn on each journal store: a bbolt file, and PostgreSQL when
// AGENTONCE_PG_URL is set.
func stores(t *testing.T, fn func(t *testing.T, open func() journal.Store)) {
	t.Run("bbolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "server.journal")
		fn(t, func() journal.Store { return openAt(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		schema := pgtest.Schema(t, "agentonce_idem_")
		fn(t, func() journal.Store { return openPG(t, url, schema) })
	})
}

func openAt(t testing.TB, location string) journal.Store {
	t.Helper()
	s, err := journal.Open(context.Background(), location, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPG(t testing.TB, url, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ledger counts the effects a handler really performed, per body.
type ledger struct {
	mu      sync.Mutex
	effects map[string]int
	total   int
}

func (l *ledger) add(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.effects == nil {
		l.effects = map[string]int{}
	}
	l.effects[body]++
	l.total++
	return l.total
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// chargeServer is a payments API with one protected route, POST
// /v1/charges, whose handler records an effect in l and answers 201.
func chargeServer(t *testing.T, store journal.Store, opts *idempotency.Options, l *ledger, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			n := l.add(string(b))
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", fmt.Sprintf("/v1/charges/ch_%d", n))
			w.Header().Set("Set-Cookie", "session=secret")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "{\"id\": \"ch_%d\",  \"object\":\"charge\"}\n", n)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(h))
	mux.Handle("POST /v1/charges/{id}/capture", m.Handler(h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// post sends one request and returns its status, header and body; a
// dropped connection is status 0 with the error as body.
func post(t testing.TB, url, key, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
