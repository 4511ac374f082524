package idempotency_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal/memory"
)

// New refuses a TTL shorter than the lease: the key would be new again
// while its first request may still run.
func TestTTLShorterThanLease(t *testing.T) {
	for _, o := range []idempotency.Options{{TTL: 2 * time.Second}, {TTL: time.Minute, LeaseTTL: 2 * time.Minute}} {
		if _, err := idempotency.New(memory.New(nil), &o); err == nil || !strings.Contains(err.Error(), "shorter than LeaseTTL") {
			t.Errorf("New(TTL %v, LeaseTTL %v) = %v; want an error naming LeaseTTL", o.TTL, o.LeaseTTL, err)
		}
	}
}

// TTL counts from the first request, and never while it runs: TTL 2 s, a
// handler of 6 s. A retry while it runs, past the TTL, gets 409; a retry
// after its answer runs as a new request (the key is new again at the
// later of first request + TTL and the answer), and that run is answered
// for its own TTL. On a fake clock (testing/synctest), with the real
// lease renewals, over an in-memory connection.
func TestTTLFromTheFirstRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int64
		m, err := idempotency.New(memory.New(nil), &idempotency.Options{TTL: 2 * time.Second, LeaseTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				time.Sleep(6 * time.Second)
			}
			w.WriteHeader(http.StatusCreated)
		})))
		client := pipeServer(t, mux)
		post := func() (int, string) {
			req, _ := http.NewRequest(http.MethodPost, "http://pipe/v1/charges", strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", `"k1"`)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
		}
		first := make(chan int)
		go func() { st, _ := post(); first <- st }()
		time.Sleep(3 * time.Second) // past the TTL, the handler running
		if st, _ := post(); st != http.StatusConflict {
			t.Errorf("a retry while the first runs, past the TTL: %d; want 409", st)
		}
		if st := <-first; st != http.StatusCreated {
			t.Fatalf("first = %d; want 201", st)
		}
		time.Sleep(500 * time.Millisecond)
		if st, replayed := post(); st != http.StatusCreated || replayed != "" || runs.Load() != 2 {
			t.Errorf("a retry after the answer, past the TTL: %d replayed %q, runs %d; want a new run (201, 2 runs)", st, replayed, runs.Load())
		}
		time.Sleep(1900 * time.Millisecond)
		if st, replayed := post(); st != http.StatusCreated || replayed != "true" || runs.Load() != 2 {
			t.Errorf("a retry within the second run's TTL: %d replayed %q, runs %d; want the replay", st, replayed, runs.Load())
		}
		time.Sleep(100 * time.Millisecond)
		if st, replayed := post(); st != http.StatusCreated || replayed != "" || runs.Load() != 3 {
			t.Errorf("a retry at the second run's TTL: %d replayed %q, runs %d; want a new run", st, replayed, runs.Load())
		}
	})
}

// pipeServer serves h over net.Pipe connections, which testing/synctest
// counts as durably blocking (a loopback socket is not), and returns a
// client of it; both are closed with the test.
func pipeServer(t *testing.T, h http.Handler) *http.Client {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		select {
		case l.conns <- s:
			return c, nil
		case <-l.done:
			return nil, net.ErrClosed
		}
	}}
	t.Cleanup(func() { tr.CloseIdleConnections(); srv.Close() })
	return &http.Client{Transport: tr}
}

type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
