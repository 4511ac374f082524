package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

func TestObserverAndLog(t *testing.T) {
	_, st := tempJournal(t)
	var logBuf bytes.Buffer
	var mu sync.Mutex
	kinds := map[harness.EventKind]int{}
	var statuses []harness.Status
	obs := harness.ObserverFunc(func(ctx context.Context, e harness.Event) {
		mu.Lock()
		defer mu.Unlock()
		kinds[e.Kind]++
		if e.Kind == harness.EventResult {
			statuses = append(statuses, e.Status)
		}
	})
	h := newHarness(t, st, &harness.Options{Observer: obs,
		Logger: slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	n := 0
	require.NoError(t, h.Register(harness.Tool{Name: "flaky", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			n++
			if n == 1 {
				return nil, &retryclass.StatusError{Status: 503, RetryAfter: time.Millisecond}
			}
			return json.RawMessage(`"ok"`), nil
		}}))
	ctx := context.Background()
	c := call("flaky", `{"a":1}`)
	res := h.CallAll(ctx, []harness.Call{c, c})
	require.Equal(t, harness.Executed, res[0].Status)
	require.Equal(t, harness.Collapsed, res[1].Status)
	again, err := h.Call(ctx, c)
	require.NoError(t, err)
	require.Equal(t, harness.Replayed, again.Status)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, kinds[harness.EventBeforeWriteAhead], "one per flight; the replay is a read")
	require.Equal(t, 2, kinds[harness.EventAfterWriteAhead], "one per attempt")
	require.Equal(t, 2, kinds[harness.EventAfterEffect])
	require.Equal(t, 1, kinds[harness.EventAfterOutcome])
	require.Equal(t, 1, kinds[harness.EventRetry])
	require.Equal(t, []harness.Status{harness.Executed, harness.Collapsed, harness.Replayed}, statuses)

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	msgs := []string{}
	for _, m := range lines {
		msgs = append(msgs, m["msg"].(string))
	}
	require.Equal(t, []string{"agentonce retried", "agentonce executed", "agentonce collapsed", "agentonce replayed"}, msgs)
	require.Equal(t, "not-executed", lines[0]["class"], "503 with Retry-After did not execute")
	require.Equal(t, res[0].Key.String(), lines[0]["key"])
	require.NotEmpty(t, lines[0]["delay"])
}

func TestTransportSendsKeyAndAttempt(t *testing.T) {
	type seen struct{ key, id string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Header.Get("Idempotency-Key"), r.Header.Get("PayPal-Request-Id")})
		n := len(got)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0.001")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	client := &http.Client{Transport: &harness.Transport{RequestIDHeader: "PayPal-Request-Id"}}

	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	require.NoError(t, h.Register(harness.Tool{Name: "pay", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(in))
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if err := retryclass.ResponseError(resp); err != nil {
				return nil, err
			}
			return json.RawMessage(`"paid"`), nil
		}}))
	res, err := h.Call(context.Background(), call("pay", `{"amount":1}`))
	require.NoError(t, err)
	require.Equal(t, harness.Executed, res.Status)
	require.Len(t, got, 2)
	require.Equal(t, res.Key.String(), got[0].key)
	require.Equal(t, got[0].key, got[1].key, "one key for every attempt")
	require.NotEmpty(t, got[0].id)
	require.NotEqual(t, got[0].id, got[1].id, "a request id per attempt")

	// Without a key in the context the request passes through untouched.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "", got[2].key)
}

func TestCloseWaitsForCallsInProgress(t *testing.T) {
	_, st := tempJournal(t)
	h := harness.New(st, &harness.Options{Retry: fastRetry})
	started, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, h.Register(harness.Tool{Name: "slow", Effect: harness.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`"done"`), nil
		}}))
	done := make(chan harness.Result)
	go func() {
		res, _ := h.Call(context.Background(), call("slow", `{}`))
		done <- res
	}()
	<-started
	closed := make(chan error)
	go func() { closed <- h.Close() }()
	_, err := h.Call(context.Background(), call("slow", `{"other":1}`))
	for !errors.Is(err, harness.ErrClosed) {
		// Close may not have taken the lock yet.
		time.Sleep(time.Millisecond)
		_, err = h.Call(context.Background(), call("slow", `{"other":1}`))
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a call was in progress")
	default:
	}
	close(release)
	res := <-done
	require.NoError(t, <-closed)
	require.Equal(t, harness.Executed, res.Status)
	rec, err := st.Get(context.Background(), res.Key)
	require.NoError(t, err)
	require.Equal(t, "succeeded", rec.State.String(), "the outcome was recorded before Close returned")
}
