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

// net/http resends a keyed request whose reused connection died after
// sending. Here the first send charges and its connection dies; the
// resend, and every later attempt, is refused with 429 ("not executed").
// The harness must not conclude that nothing was done: the charge
// happened, so the outcome is unknown (the fault checker found this with
// a server killed mid-request).
func TestResendAnswerIsNotTakenForTheFirstSend(t *testing.T) {
	var charges, posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, "warm")
			return
		}
		io.Copy(io.Discard, r.Body)
		if posts.Add(1) == 1 {
			charges.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
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
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed, Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		// Warm a keep-alive connection, so that the charge reuses it.
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
	t.Logf("result: %v %v", res.Status, res.Err)
}

// The same when the resend never reaches the server: the first send
// charges, its reused connection dies, and the server is gone, so
// net/http's resend is refused at its dial ("connection refused", not
// executed). The resend wrote nothing, but the first send did: the
// outcome is not "nothing was done".
func TestResendRefusedAtDialIsNotTakenForTheFirstSend(t *testing.T) {
	var charges atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, "warm")
			return
		}
		io.Copy(io.Discard, r.Body)
		charges.Add(1)
		srv.Listener.Close() // the server goes away: a new dial is refused
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // and the answer is lost with the connection
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: &downstream.Transport{Base: &http.Transport{}}}
	store, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var dials atomic.Int32
	h := harness.New(store, &harness.Options{Retry: &retryclass.Policy{MaxAttempts: 3, InitialInterval: 1, MaxInterval: 1}})
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed, Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
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
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return json.RawMessage(`{"ok":true}`), nil
	}})
	res := h.Call(context.Background(), harness.ToolCall{Tenant: "t", Session: "s", Turn: "1", Tool: "charge", Input: json.RawMessage(`{"cents":100}`)})
	if dials.Load() == 0 {
		t.Fatalf("net/http did not dial again after the lost answer, so the test did not test")
	}
	if charges.Load() != 1 {
		t.Fatalf("charges = %d; want 1", charges.Load())
	}
	if res.Status == harness.Failed {
		t.Errorf("after a charge whose answer was lost and whose resend was refused = failed (%v); want not failed: the charge happened", res.Err)
	}
	t.Logf("result: %v %v", res.Status, res.Err)
}
