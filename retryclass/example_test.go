package retryclass_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

func ExampleClassify() {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	for _, err := range []error{
		nil,
		fmt.Errorf("charge: %w", refused),
		fmt.Errorf("charge: %w", reset),
		&retryclass.StatusError{Status: 422},
		retryclass.Permanent(errors.New("amount must be positive")),
		errors.New("something no one recognises"),
	} {
		fmt.Println(retryclass.Classify(err))
	}
	// Output:
	// success
	// not-executed
	// maybe-executed
	// mismatch status=422
	// terminal
	// maybe-executed
}

func ExampleClassifyContext() {
	caller := context.Background()
	toolCtx, cancel := context.WithTimeout(caller, time.Nanosecond)
	defer cancel()
	<-toolCtx.Done()
	// The tool's own timeout, while the caller still waits: the request
	// may have been sent.
	fmt.Println(retryclass.ClassifyContext(caller, toolCtx.Err()))

	// The caller gave up: stop.
	callerCtx, cancelCaller := context.WithCancel(context.Background())
	cancelCaller()
	fmt.Println(retryclass.ClassifyContext(callerCtx, callerCtx.Err()))
	// Output:
	// maybe-executed
	// canceled
}

func ExampleClassifyResponse() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(retryclass.ClassifyResponse(resp))
	// Output: not-executed status=429 retry-after=2s
}

func ExampleResponseError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":"idempotency key reused with a different body"}`)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/charges", "application/json", strings.NewReader(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	err = retryclass.ResponseError(resp)
	fmt.Println(strings.Replace(err.Error(), srv.URL, "http://server", 1))
	fmt.Println(retryclass.Classify(err))
	// Output:
	// POST http://server/v1/charges: 422 Unprocessable Entity: {"error":"idempotency key reused with a different body"}
	// mismatch status=422
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, h := range []http.Header{
		{"Retry-After": {"120"}},
		{"Retry-After": {"Sun, 29 Nov 2026 09:00:30 GMT"}},
		{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}},
		{"Retry-After": {"soon"}},
	} {
		fmt.Println(retryclass.ParseRetryAfter(h, now))
	}
	// Output:
	// 2m0s true
	// 30s true
	// 250ms true
	// 0s false
}

func ExampleMarkNotExecuted() {
	// A tool that checked its own rate limiter before doing anything.
	err := retryclass.MarkNotExecuted(retryclass.WithRetryAfter(errors.New("local rate limit"), 3*time.Second))
	fmt.Println(retryclass.Classify(err))
	// Output: not-executed retry-after=3s
}

func ExampleSuppress() {
	err := retryclass.Suppress(errors.New("order 8812 already has a different pending charge"))
	v := retryclass.Classify(err)
	fmt.Println(v.Class, v.Class.Suppressing())
	// Output: mismatch true
}

func ExamplePolicy_NewSchedule() {
	p := &retryclass.Policy{
		MaxAttempts:     4,
		InitialInterval: time.Millisecond,
		Multiplier:      2,
		Jitter:          -1, // none, so that the output is stable
	}
	ctx := context.Background()
	s := p.NewSchedule()
	for {
		err := errors.New("connection reset") // every try fails
		v := p.Verdict(ctx, err)
		delay, ok := s.Next(ctx, v)
		if !ok {
			fmt.Printf("stop after %d attempts (%v): %v\n", s.Attempts(), s.StopReason(), v)
			return
		}
		fmt.Printf("try %d failed (%v); wait %v\n", s.Attempts()-1, v, delay)
		if err := retryclass.Wait(ctx, delay); err != nil {
			return
		}
	}
	// Output:
	// try 1 failed (maybe-executed); wait 1ms
	// try 2 failed (maybe-executed); wait 2ms
	// try 3 failed (maybe-executed); wait 4ms
	// stop after 4 attempts (attempts): maybe-executed
}

// A payment API known to answer 503 only before it does any work: for this
// tool, 503 is NotExecuted even without Retry-After.
func ExamplePolicy_classifyOverride() {
	p := &retryclass.Policy{Classify: func(ctx context.Context, err error) retryclass.Verdict {
		v := retryclass.ClassifyContext(ctx, err)
		if v.Status == http.StatusServiceUnavailable {
			v.Class = retryclass.NotExecuted
		}
		return v
	}}
	err := &retryclass.StatusError{Status: 503}
	fmt.Println(retryclass.Classify(err))
	fmt.Println(p.Verdict(context.Background(), err))
	// Output:
	// maybe-executed status=503
	// not-executed status=503
}

func ExampleSuppressionText() {
	fmt.Println(retryclass.SuppressionText(retryclass.Verdict{Class: retryclass.InFlight}))
	fmt.Println(retryclass.SuppressionText(retryclass.Verdict{Class: retryclass.Mismatch}))
	// Output:
	// Not repeated: this exact action is already in progress. This is not an input error. Do not retry this call and do not change its input.
	// Not repeated: this action was already requested with a different input. This is not an input error. Do not retry this call and do not change its input.
}

func ExampleNewBudget() {
	// One budget per downstream, shared by every tool that calls it: at most
	// one retry for every ten calls, plus one a minute.
	payments := retryclass.NewBudget(&retryclass.BudgetOptions{Ratio: 0.1, MinPerSecond: 1.0 / 60, Window: time.Minute})
	p := &retryclass.Policy{Budget: payments}
	ctx := context.Background()
	failing := retryclass.Verdict{Class: retryclass.NotExecuted, Status: 503}
	granted := 0
	for range 20 { // 20 calls against a downstream that fails them all
		s := p.NewSchedule()
		if _, ok := s.Next(ctx, failing); ok {
			granted++
		}
	}
	fmt.Println("retries granted:", granted)
	// Output: retries granted: 3
}

func ExampleWait() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(retryclass.Wait(ctx, time.Hour))
	// Output: context canceled
}
