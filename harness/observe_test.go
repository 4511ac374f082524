package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

func TestObserverAndLog(t *testing.T) {
	_, st := tempJournal(t)
	var logBuf bytes.Buffer
	var mu sync.Mutex
	kinds := map[harness.EventKind]int{}
	var statuses []harness.Source
	obs := harness.ObserverFunc(func(ctx context.Context, e harness.Event) {
		mu.Lock()
		defer mu.Unlock()
		kinds[e.Kind]++
		if e.Kind == harness.EventResult {
			statuses = append(statuses, e.Source)
		}
	})
	h := newHarness(t, st, &harness.Options{Observer: obs,
		Logger: slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	n := 0
	mustRegister(t, h, harness.Tool{Name: "flaky", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			n++
			if n == 1 {
				return nil, &retryclass.StatusError{Status: 503, RetryAfter: time.Millisecond}
			}
			return json.RawMessage(`"ok"`), nil
		}})
	ctx := context.Background()
	c := call("flaky", `{"a":1}`)
	res := h.CallAll(ctx, []harness.ToolCall{c, c})
	if len(res) != 2 {
		t.Fatalf("CallAll of 2 calls returned %d results; want 2", len(res))
	}
	if !res[0].OK() || res[0].Source != harness.Executed {
		t.Errorf("result 0: Status = %v; want %v (err %v)", res[0].Status, harness.Executed, res[0].Err)
	}
	if !res[1].OK() || res[1].Source != harness.Collapsed {
		t.Errorf("result 1: Status = %v; want %v", res[1].Status, harness.Collapsed)
	}
	if again := mustCall(t, h, c); !again.OK() || again.Source != harness.Replayed {
		t.Errorf("re-issue: Status = %v; want %v", again.Status, harness.Replayed)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, tc := range []struct {
		kind harness.EventKind
		want int
		why  string
	}{
		{harness.EventBeforeWriteAhead, 1, "one per flight; the replay is a read"},
		{harness.EventAfterWriteAhead, 2, "one per attempt"},
		{harness.EventAfterEffect, 2, "one per attempt"},
		{harness.EventAfterOutcome, 1, "one per flight"},
		{harness.EventRetry, 1, "one retry"},
	} {
		if got := kinds[tc.kind]; got != tc.want {
			t.Errorf("%v events = %d; want %d (%s)", tc.kind, got, tc.want, tc.why)
		}
	}
	if want := []harness.Source{harness.Executed, harness.Collapsed, harness.Replayed}; !slices.Equal(statuses, want) {
		t.Errorf("result event sources = %v; want %v", statuses, want)
	}

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %s: %v", l, err)
		}
		lines = append(lines, m)
	}
	msgs := []string{}
	for _, m := range lines {
		msgs = append(msgs, m["msg"].(string))
	}
	if want := []string{"agentonce retried", "agentonce succeeded (executed)", "agentonce succeeded (collapsed)", "agentonce succeeded (replayed)"}; !slices.Equal(msgs, want) {
		t.Fatalf("log messages = %q; want %q", msgs, want)
	}
	if got := lines[0]["class"]; got != "not-executed" {
		t.Errorf("retry log class = %v; want not-executed (503 with Retry-After did not execute)", got)
	}
	if got, want := lines[0]["key"], res[0].Key.String(); got != want {
		t.Errorf("retry log key = %v; want %s", got, want)
	}
	if d, ok := lines[0]["delay"].(float64); !ok || d == 0 {
		t.Errorf("retry log delay = %v; want a non-zero duration", lines[0]["delay"])
	}
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
	client := &http.Client{Transport: &downstream.Transport{RequestIDHeader: "PayPal-Request-Id"}}

	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	mustRegister(t, h, harness.Tool{Name: "pay", Effect: journal.Keyed,
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
		}})
	res := mustCall(t, h, call("pay", `{"amount":1}`))
	if !res.OK() || res.Source != harness.Executed {
		t.Errorf("Status = %v; want %v (err %v)", res.Status, harness.Executed, res.Err)
	}
	if len(got) != 2 {
		t.Fatalf("requests the server saw = %d; want 2", len(got))
	}
	if got[0].key != res.Key.String() {
		t.Errorf("first request's Idempotency-Key = %q; want the call's key %s", got[0].key, res.Key)
	}
	if got[1].key != got[0].key {
		t.Errorf("second request's Idempotency-Key = %q; want %q (one key for every attempt)", got[1].key, got[0].key)
	}
	if got[0].id == "" {
		t.Errorf("first request's PayPal-Request-Id is empty; want an attempt id")
	}
	if got[0].id == got[1].id {
		t.Errorf("both requests have PayPal-Request-Id %q; want one per attempt", got[0].id)
	}

	// Without a key in the context the request passes through untouched.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET without a key: %v", err)
	}
	resp.Body.Close()
	if got[2].key != "" {
		t.Errorf("Idempotency-Key without a key in the context = %q; want none", got[2].key)
	}
}

func TestCloseWaitsForCallsInProgress(t *testing.T) {
	_, st := tempJournal(t)
	h := harness.New(st, &harness.Options{Retry: fastRetry})
	started, release := make(chan struct{}), make(chan struct{})
	mustRegister(t, h, harness.Tool{Name: "slow", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`"done"`), nil
		}})
	done := make(chan harness.Result)
	go func() {
		res := h.Call(context.Background(), call("slow", `{}`))
		done <- res
	}()
	<-started
	closed := make(chan error)
	go func() { closed <- h.Close() }()
	// Close may not have taken the lock yet: a call may still get in, and
	// then must wait for release like the first.
	for {
		if res := h.Call(context.Background(), call("slow", `{"other":1}`)); errors.Is(res.Err, harness.ErrClosed) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a call was in progress")
	default:
	}
	close(release)
	res := <-done
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !res.OK() || res.Source != harness.Executed {
		t.Errorf("Status = %v; want %v (err %v)", res.Status, harness.Executed, res.Err)
	}
	if got := mustGet(t, st, res.Key).State.String(); got != "succeeded" {
		t.Errorf("record state = %s; want succeeded (the outcome was recorded before Close returned)", got)
	}
}
