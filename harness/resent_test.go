package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// net/http resends a request that may be replayed (it carries an
// Idempotency-Key) when its reused connection dies after sending. In each
// case the first send charges and its connection dies; what the resend
// gets, and every later attempt, says "not executed". The harness must not
// conclude that nothing was done: the charge happened, so the call is not
// failed.
//   - refused: the resend, and every later attempt, is refused with 429;
//   - down: the server is gone, so the resend is refused at its dial and
//     writes nothing;
//   - unkeyed: an Unkeyed tool whose request carries an SDK's own
//     Idempotency-Key, which the downstream ignores, refused with 429.
func TestResendIsNotTakenForTheFirstSend(t *testing.T) {
	for _, tc := range []struct {
		name   string
		effect journal.Effect
		down   bool
		sdkKey bool
	}{
		{"refused", journal.Keyed, false, false},
		{"down", journal.Keyed, true, false},
		{"unkeyed", journal.Unkeyed, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var charges, posts, dials atomic.Int32
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					fmt.Fprint(w, "warm")
					return
				}
				io.Copy(io.Discard, r.Body)
				if posts.Add(1) == 1 {
					charges.Add(1)
					if tc.down {
						srv.Listener.Close() // the server goes away: a new dial is refused
					}
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
			mustRegister(t, h, harness.Tool{Name: "charge", Effect: tc.effect, Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				// Warm a keep-alive connection, so that the charge reuses it.
				warm, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				if err != nil {
					return nil, err
				}
				if resp, err := client.Do(warm); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{ConnectStart: func(string, string) { dials.Add(1) }})
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/charge", bytes.NewReader(in))
				if err != nil {
					return nil, err
				}
				if tc.sdkKey {
					req.Header.Set("Idempotency-Key", "sdk-1") // the SDK's own; the downstream ignores it
				}
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
			if resent := posts.Load() >= 2 || tc.down && dials.Load() > 0; !resent {
				t.Fatalf("the charge was sent %d times and dialled %d; net/http did not resend it, so the test did not test", posts.Load(), dials.Load())
			}
			if charges.Load() != 1 {
				t.Fatalf("charges = %d; want 1", charges.Load())
			}
			if res.Status == harness.Failed {
				t.Errorf("after a charge whose answer was lost = failed (%v); want not failed: the charge happened", res.Err)
			}
			t.Logf("result: %v %v", res.Status, res.Err)
		})
	}
}
