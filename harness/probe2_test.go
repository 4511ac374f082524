package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// An Unkeyed tool whose request carries an Idempotency-Key of its own (an
// SDK's, which the downstream does not honour): net/http resends it when
// its reused connection dies after sending, as for a keyed tool. The
// resend's "not executed" answer (429) is not the first send's, which
// charged: the call must not be failed. downstream.Transport notes
// resends only for keyed tools.
func TestProbeUnkeyedResendIsNotTakenForTheFirstSend(t *testing.T) {
	var charges, posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, "warm")
			return
		}
		io.Copy(io.Discard, r.Body)
		if posts.Add(1) == 1 {
			charges.Add(1)
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close() // the answer is lost with the connection
			}
			return
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &downstream.Transport{Base: &http.Transport{}}}

	store, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := harness.New(store, &harness.Options{Retry: &retryclass.Policy{MaxAttempts: 3, InitialInterval: 1, MaxInterval: 1}})
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Unkeyed, Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		warm, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return nil, err
		}
		if resp, err := client.Do(warm); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/charge", bytes.NewReader(in))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Idempotency-Key", "sdk-1") // the SDK's own; the downstream ignores it
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, retryclass.ResponseError(resp)
		}
		return json.RawMessage(`{"ok":true}`), nil
	}})
	res := h.Call(context.Background(), harness.ToolCall{Tenant: "t", Session: "s", Turn: "1", Tool: "charge", Input: json.RawMessage(`{"cents":100}`)})
	if posts.Load() < 2 {
		t.Fatalf("the charge was sent %d times; net/http did not resend it, so the test did not test", posts.Load())
	}
	if charges.Load() != 1 {
		t.Fatalf("charges = %d; want 1", charges.Load())
	}
	if res.Status == harness.Failed {
		t.Errorf("after a charge whose answer was lost = failed (%v); want not failed: the charge happened", res.Err)
	}
	t.Logf("result: %v %v, posts %d", res.Status, res.Err, posts.Load())
}
