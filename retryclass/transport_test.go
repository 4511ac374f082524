package retryclass_test

// Classification of the errors a real http.Client returns against real
// loopback servers: the errors are not constructed by hand, so a change in
// how net/http wraps them shows up here.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

// freshClient returns a client whose connections are never reused, so that
// net/http's own retry of a failed reused connection does not interfere.
func freshClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestTransportConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = freshClient(0).Post("http://"+addr+"/charge", "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("POST to a closed port succeeded")
	}
	if got := retryclass.Classify(err); got.Class != retryclass.NotExecuted {
		t.Errorf("Classify(%v) = %v; want not-executed", err, got)
	}
}

func TestTransportDNSFailure(t *testing.T) {
	// A resolver that cannot reach any name server: the Go resolver turns
	// that into a *net.DNSError, without leaving the machine.
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no name server in tests")
	}}
	d := &net.Dialer{Resolver: r}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	_, err := c.Post("http://payments.agentonce.invalid/charge", "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("POST to an unresolvable host succeeded")
	}
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		t.Fatalf("err = %v (%T); want a *net.DNSError inside", err, err)
	}
	if got := retryclass.Classify(err); got.Class != retryclass.NotExecuted {
		t.Errorf("Classify(%v) = %v; want not-executed", err, got)
	}
}

func TestTransportResetAfterRequest(t *testing.T) {
	var effects atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1) // the side effect happened; the answer is then lost
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // close with RST
		}
		conn.Close()
	}))
	defer srv.Close()
	_, err := freshClient(0).Post(srv.URL+"/charge", "application/json", strings.NewReader(`{"amount":"49.00"}`))
	if err == nil {
		t.Fatal("POST succeeded; want a reset")
	}
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects = %d; want 1", n)
	}
	if got := retryclass.Classify(err); got.Class != retryclass.MaybeExecuted {
		t.Errorf("Classify(%v) = %v; want maybe-executed (the effect happened)", err, got)
	}
}

// blockingServer counts requests and holds each until the test ends.
func blockingServer(t *testing.T) (srv *httptest.Server, effects *atomic.Int32, started chan struct{}) {
	effects = new(atomic.Int32)
	started = make(chan struct{}, 16)
	release := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1)
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, effects, started
}

func TestTransportClientTimeout(t *testing.T) {
	srv, effects, _ := blockingServer(t)
	_, err := freshClient(50*time.Millisecond).Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("POST succeeded; want a timeout")
	}
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects = %d; want 1", n)
	}
	if got := retryclass.ClassifyContext(context.Background(), err); got.Class != retryclass.MaybeExecuted {
		t.Errorf("ClassifyContext(live, %v) = %v; want maybe-executed", err, got)
	}
}

func TestTransportToolTimeoutVersusCallerCancel(t *testing.T) {
	srv, _, started := blockingServer(t)
	post := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
		resp, err := freshClient(0).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	// The tool's own timeout, under a live caller context.
	caller := context.Background()
	toolCtx, cancel := context.WithTimeout(caller, 50*time.Millisecond)
	err := post(toolCtx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want DeadlineExceeded", err)
	}
	if got := retryclass.ClassifyContext(caller, err); got.Class != retryclass.MaybeExecuted {
		t.Errorf("ClassifyContext(live caller, %v) = %v; want maybe-executed", err, got)
	}

	// The caller cancels once a request is in flight (the token may be the
	// first request's; then the cancel comes earlier, which classifies the
	// same).
	callerCtx, cancelCaller := context.WithCancel(context.Background())
	go func() { <-started; cancelCaller() }()
	err = post(callerCtx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want Canceled", err)
	}
	if got := retryclass.ClassifyContext(callerCtx, err); got.Class != retryclass.Canceled {
		t.Errorf("ClassifyContext(canceled caller, %v) = %v; want canceled", err, got)
	}
}

func TestTransportStatuses(t *testing.T) {
	tests := []struct {
		status int
		header map[string]string
		want   retryclass.Verdict
	}{
		{200, nil, v(retryclass.Success, 0, 200)},
		{429, map[string]string{"Retry-After": "3"}, v(retryclass.NotExecuted, 3*time.Second, 429)},
		{503, map[string]string{"Retry-After": "2"}, v(retryclass.NotExecuted, 2*time.Second, 503)},
		{503, nil, v(retryclass.MaybeExecuted, 0, 503)},
		{500, nil, v(retryclass.MaybeExecuted, 0, 500)},
		{502, nil, v(retryclass.MaybeExecuted, 0, 502)},
		{504, nil, v(retryclass.MaybeExecuted, 0, 504)},
		{409, nil, v(retryclass.InFlight, 0, 409)},
		{422, nil, v(retryclass.Mismatch, 0, 422)},
		{400, nil, v(retryclass.Terminal, 0, 400)},
		{429, map[string]string{"Retry-After-Ms": "120"}, v(retryclass.NotExecuted, 120*time.Millisecond, 429)},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, val := range tt.header {
				w.Header().Set(k, val)
			}
			w.WriteHeader(tt.status)
			w.Write([]byte(`{"error":"x"}`))
		}))
		resp, err := http.Post(srv.URL+"/charge?token=secret", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := retryclass.ClassifyResponse(resp); got != tt.want {
			t.Errorf("ClassifyResponse(%d %v) = %v; want %v", tt.status, tt.header, got, tt.want)
		}
		rerr := retryclass.ResponseError(resp)
		if tt.status == 200 {
			if rerr != nil {
				t.Errorf("ResponseError(200) = %v; want nil", rerr)
			}
		} else if got := retryclass.Classify(rerr); got != tt.want {
			t.Errorf("Classify(ResponseError(%d %v)) = %v; want %v", tt.status, tt.header, got, tt.want)
		}
		if rerr != nil && strings.Contains(rerr.Error(), "secret") {
			t.Errorf("ResponseError(%d).Error() = %q; leaks the query", tt.status, rerr)
		}
		resp.Body.Close()
		srv.Close()
	}
}
