package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

type connRequestsKey struct{}

// Issue 14: net/http resends a request that failed on a reused keep-alive
// connection when it counts as replayable, and a request carrying an
// Idempotency-Key header does. For an Unkeyed tool, whose downstream
// ignores the key, that resend is a second effect behind the harness's
// back. Its requests must carry nothing that lets net/http resend them.
func TestTransportNoResendForUnkeyed(t *testing.T) {
	var effects atomic.Int32
	var dropped atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connRequestsKey{}).(*atomic.Int32).Add(1)
		if r.Method == http.MethodGet {
			io.WriteString(w, "warm")
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		effects.Add(1) // the mail is sent once the request is read
		if n > 1 && !dropped.Swap(true) {
			// The first request on a reused connection: the server goes
			// away before answering.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		io.WriteString(w, `{"sent":true}`)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connRequestsKey{}, new(atomic.Int32))
	}
	srv.Start()
	t.Cleanup(srv.Close)

	client := &http.Client{Transport: &downstream.Transport{Base: srv.Client().Transport}}
	// Warm a keep-alive connection so that the tool's POST reuses it.
	resp, err := client.Get(srv.URL + "/warm")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, harness.Tool{Name: "send_mail", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/send", bytes.NewReader(in))
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			return io.ReadAll(resp.Body)
		}})
	res := h.Call(context.Background(), probeCall("send_mail", `{"to":"ann@example.com"}`))
	if n := effects.Load(); n != 1 {
		t.Errorf("mails the server sent for the tool's POST = %d; want 1", n)
	}
	if isSuccess(res) {
		t.Errorf("result: %s; want no success (the server never answered)", describe(res))
	}
	if !dropped.Load() {
		t.Errorf("the tool's POST did not reuse the warm connection: the probe did not run")
	}
}
