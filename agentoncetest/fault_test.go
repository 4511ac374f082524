package agentoncetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/retryclass"
)

// send posts body with key through c under its own short deadline, the
// client's timeout that a Delay fault outlasts.
func send(c *http.Client, url, key, body string) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// TestFaultTransportEachFault sends one request under each fault, checks
// how retryclass classifies what came back and how many effects the
// downstream made, then retries with the same key and checks that the
// retry converges on exactly one effect.
func TestFaultTransportEachFault(t *testing.T) {
	for _, tc := range []struct {
		fault agentoncetest.Fault
		// class of the first answer; Success with status for a response
		class         retryclass.Class
		status        int
		effectsBefore int // -1: 0 or 1 (the downstream may not have finished)
		retryReplayed bool
	}{
		{agentoncetest.NoFault, retryclass.Success, 201, 1, true},
		{agentoncetest.LoseResponse, retryclass.MaybeExecuted, 0, 1, true},
		{agentoncetest.Delay, retryclass.MaybeExecuted, 0, 1, true},
		{agentoncetest.Unavailable, retryclass.NotExecuted, 503, 0, false},
		{agentoncetest.ResetBeforeSend, retryclass.NotExecuted, 0, 0, false},
		{agentoncetest.ResetAfterSend, retryclass.MaybeExecuted, 0, -1, false},
		{agentoncetest.Duplicate, retryclass.Success, 201, 1, true},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			srv := agentoncetest.NewServer(t, &charges{}, nil)
			ft := agentoncetest.NewFaultTransport(srv.Client().Transport, &agentoncetest.FaultOptions{
				Script:     []agentoncetest.Fault{tc.fault},
				RetryAfter: 1500 * time.Millisecond,
			})
			c := &http.Client{Transport: ft}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/charges", strings.NewReader(`{"cents":4900}`))
			req.Header.Set("Idempotency-Key", "k")
			resp, err := c.Do(req)
			var v retryclass.Verdict
			if err != nil {
				v = retryclass.ClassifyContext(context.Background(), err)
				var fe *agentoncetest.FaultError
				if !errors.As(err, &fe) || fe.Fault != tc.fault || fe.Request != 1 {
					t.Errorf("error %v: want a *FaultError for %v, request 1", err, tc.fault)
				}
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				v = retryclass.ClassifyResponse(resp)
			}
			if v.Class != tc.class || v.Status != tc.status {
				t.Errorf("first answer (err %v) classified %v status %d; want %v status %d", err, v.Class, v.Status, tc.class, tc.status)
			}
			if tc.fault == agentoncetest.Unavailable && v.RetryAfter != 1500*time.Millisecond {
				t.Errorf("503 RetryAfter = %v; want 1.5s", v.RetryAfter)
			}
			if tc.fault == agentoncetest.Duplicate && resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a duplicated delivery returned the first response; want the second (replayed)")
			}
			if e := srv.Downstream.Effects("k"); tc.effectsBefore >= 0 && e != tc.effectsBefore {
				t.Errorf("Effects(k) after the fault = %d; want %d", e, tc.effectsBefore)
			}

			// Retry with the same key until the downstream stops saying
			// 409 (ResetAfterSend can leave the first one running).
			var r *http.Response
			var body []byte
			polls := 0 // 409s while the first request still ran
			for range 1000 {
				r, body, err = send(c, srv.URL+"/charges", "k", `{"cents":4900}`)
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				if r.StatusCode != http.StatusConflict {
					break
				}
				polls++
				time.Sleep(time.Millisecond) // poll; nothing is timed
			}
			replayed := r.Header.Get("Idempotent-Replayed") == "true"
			if r.StatusCode != 201 || (tc.effectsBefore >= 0 && replayed != tc.retryReplayed) {
				t.Errorf("retry = %d replayed=%v %s; want 201 replayed=%v", r.StatusCode, replayed, body, tc.retryReplayed)
			}
			if e, dup := srv.Downstream.Effects("k"), srv.Downstream.Duplicates(); e != 1 || dup != 0 {
				t.Errorf("after the retry Effects(k), Duplicates() = %d, %d; want 1, 0", e, dup)
			}
			wantInjected, wantTotal := 1, 1
			if tc.fault == agentoncetest.NoFault {
				wantInjected, wantTotal = 2, 0 // both requests went through untouched
			}
			if n := ft.Injected(tc.fault); n != wantInjected {
				t.Errorf("Injected(%v) = %d; want %d", tc.fault, n, wantInjected)
			}
			if n, reqs := ft.TotalInjected(), ft.Requests(); n != wantTotal || reqs != 2+polls {
				t.Errorf("TotalInjected(), Requests() = %d, %d; want %d, %d (the request, the retry and %d polls while the first still ran)", n, reqs, wantTotal, 2+polls, polls)
			}
		})
	}
}

// TestFaultTransportDuplicateUnkeyed shows why keys matter: a request
// delivered twice without a key is charged twice.
func TestFaultTransportDuplicateUnkeyed(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, nil)
	ft := agentoncetest.NewFaultTransport(srv.Client().Transport, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{agentoncetest.Duplicate}})
	req, _ := http.NewRequest("PUT", srv.URL+"/charges/1", strings.NewReader(`{"cents":1}`))
	resp, err := (&http.Client{Transport: ft}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if e := srv.Downstream.TotalEffects(); e != 2 {
		t.Errorf("unkeyed duplicate delivery: TotalEffects() = %d; want 2", e)
	}
}

func TestFaultTransportMatch(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, nil)
	ft := agentoncetest.NewFaultTransport(srv.Client().Transport, &agentoncetest.FaultOptions{
		Rate:  1,
		Kinds: []agentoncetest.Fault{agentoncetest.ResetBeforeSend},
		Match: func(r *http.Request) bool { return r.Method == "POST" },
	})
	c := &http.Client{Transport: ft}
	resp, err := c.Get(srv.URL + "/charges")
	if err != nil {
		t.Fatalf("GET not matched by Match: %v", err)
	}
	resp.Body.Close()
	if _, _, err := send(c, srv.URL+"/charges", "k", "{}"); err == nil {
		t.Errorf("POST with Rate 1 of reset-before-send: no error")
	}
	if n, inj := ft.Requests(), ft.Injected(agentoncetest.ResetBeforeSend); n != 1 || inj != 1 {
		t.Errorf("Requests(), Injected(reset-before-send) = %d, %d; want 1, 1", n, inj)
	}
}

func TestFaultScheduleDeterministic(t *testing.T) {
	opts := &agentoncetest.FaultOptions{Seed: 42, Rate: 0.3}
	var counts [7]int
	for n := 1; n <= 1000; n++ {
		f := agentoncetest.FaultFor(opts, n)
		if g := agentoncetest.FaultFor(opts, n); g != f {
			t.Fatalf("FaultFor(seed 42, %d) = %v then %v; want the same", n, f, g)
		}
		counts[f]++
	}
	// 1000 draws at 0.3: far from 0 and from 1000, and every kind drawn.
	if counts[agentoncetest.NoFault] < 600 || counts[agentoncetest.NoFault] > 800 {
		t.Errorf("seed 42 rate 0.3: %d of 1000 unfaulted; want about 700", counts[agentoncetest.NoFault])
	}
	for _, f := range agentoncetest.AllFaults {
		if counts[f] == 0 {
			t.Errorf("seed 42 rate 0.3: %v never drawn in 1000 requests", f)
		}
	}
	other := &agentoncetest.FaultOptions{Seed: 43, Rate: 0.3}
	same := 0
	for n := 1; n <= 1000; n++ {
		if agentoncetest.FaultFor(other, n) == agentoncetest.FaultFor(opts, n) {
			same++
		}
	}
	if same == 1000 {
		t.Errorf("seeds 42 and 43 give the same 1000-request plan")
	}
	scripted := &agentoncetest.FaultOptions{Seed: 42, Rate: 1, Kinds: []agentoncetest.Fault{agentoncetest.Delay},
		Script: []agentoncetest.Fault{agentoncetest.NoFault, agentoncetest.Duplicate}}
	for n, want := range []agentoncetest.Fault{agentoncetest.NoFault, agentoncetest.Duplicate, agentoncetest.Delay} {
		if got := agentoncetest.FaultFor(scripted, n+1); got != want {
			t.Errorf("FaultFor(script, %d) = %v; want %v", n+1, got, want)
		}
	}
}

// TestFaultTransportSeededHammer drives many keyed charges concurrently
// through every fault at a high rate, each client retrying with its key
// as a careful client would, and checks the one invariant that matters:
// one effect per key, however the faults fell.
func TestFaultTransportSeededHammer(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			srv := agentoncetest.NewServer(t, &charges{}, nil)
			ft := agentoncetest.NewFaultTransport(srv.Client().Transport, &agentoncetest.FaultOptions{
				Seed: seed, Rate: 0.5, RetryAfter: time.Millisecond,
			})
			c := &http.Client{Transport: ft}
			const keys = 64
			var wg sync.WaitGroup
			var failed atomic.Int64
			for k := range keys {
				wg.Go(func() {
					key := fmt.Sprint("charge-", k)
					for range 500 {
						ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
						req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/charges", strings.NewReader(`{"k":"`+key+`"}`))
						req.Header.Set("Idempotency-Key", key)
						resp, err := c.Do(req)
						if err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
						cancel()
						if err == nil && resp.StatusCode == 201 {
							return
						}
					}
					failed.Add(1)
				})
			}
			wg.Wait()
			d := srv.Downstream
			if n := failed.Load(); n != 0 {
				t.Errorf("%d keys never got a 201 in 500 tries", n)
			}
			if e, dup, k := d.TotalEffects(), d.Duplicates(), d.Keys(); e != keys || dup != 0 || k != keys {
				t.Errorf("TotalEffects, Duplicates, Keys = %d, %d, %d; want %d, 0, %d", e, dup, k, keys, keys)
			}
			sum := ft.Injected(agentoncetest.NoFault)
			for _, f := range agentoncetest.AllFaults {
				sum += ft.Injected(f)
			}
			if sum != ft.Requests() || ft.TotalInjected() == 0 {
				t.Errorf("injected counts sum to %d over %d requests (%d faults); want equal and some faults", sum, ft.Requests(), ft.TotalInjected())
			}
			t.Logf("seed %d: %d requests, %d faults", seed, ft.Requests(), ft.TotalInjected())
		})
	}
}

func TestFaultFunc(t *testing.T) {
	for _, tc := range []struct {
		fault agentoncetest.Fault
		runs  int
		class retryclass.Class
	}{
		{agentoncetest.NoFault, 1, retryclass.Success},
		{agentoncetest.LoseResponse, 1, retryclass.MaybeExecuted},
		{agentoncetest.Delay, 1, retryclass.MaybeExecuted},
		{agentoncetest.Unavailable, 0, retryclass.NotExecuted},
		{agentoncetest.ResetBeforeSend, 0, retryclass.NotExecuted},
		{agentoncetest.ResetAfterSend, 1, retryclass.MaybeExecuted},
		{agentoncetest.Duplicate, 2, retryclass.Success},
	} {
		var runs atomic.Int64
		tool := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			n := runs.Add(1)
			return json.RawMessage(fmt.Sprintf(`{"run":%d}`, n)), nil
		}
		ff := agentoncetest.NewFaultFunc(tool, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{tc.fault}})
		caller := context.Background()
		ctx, cancel := context.WithTimeout(caller, 100*time.Millisecond) // the tool's own timeout
		out, err := ff.Call(ctx, json.RawMessage(`{}`))
		cancel()
		v := retryclass.ClassifyContext(caller, err)
		if v.Class != tc.class || int(runs.Load()) != tc.runs {
			t.Errorf("FaultFunc(%v) = %s, %v: class %v, ran %d; want class %v, ran %d", tc.fault, out, err, v.Class, runs.Load(), tc.class, tc.runs)
		}
		if tc.fault == agentoncetest.Duplicate && string(out) != `{"run":2}` {
			t.Errorf("FaultFunc(duplicate) = %s; want the second run's result", out)
		}
		if tc.fault == agentoncetest.Unavailable && (v.Status != 503 || v.RetryAfter != time.Second) {
			t.Errorf("FaultFunc(unavailable) verdict %+v; want status 503, RetryAfter 1s", v)
		}
		var opErr *net.OpError
		if (tc.fault == agentoncetest.ResetBeforeSend) != (errors.As(err, &opErr) && opErr.Op == "dial") {
			t.Errorf("FaultFunc(%v) error %v: a dial *net.OpError only for reset-before-send", tc.fault, err)
		}
		if n := ff.Injected(tc.fault); n != 1 {
			t.Errorf("Injected(%v) = %d; want 1", tc.fault, n)
		}
	}
}

func TestFaultOptionsPanics(t *testing.T) {
	for _, opts := range []*agentoncetest.FaultOptions{
		{Rate: 1.5},
		{Rate: -0.1},
		{Kinds: []agentoncetest.Fault{99}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewFaultTransport(%+v) did not panic", *opts)
				}
			}()
			agentoncetest.NewFaultTransport(nil, opts)
		}()
	}
}

func TestParseFault(t *testing.T) {
	for _, f := range append([]agentoncetest.Fault{agentoncetest.NoFault}, agentoncetest.AllFaults...) {
		got, err := agentoncetest.ParseFault(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFault(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := agentoncetest.ParseFault("explode"); err == nil || !strings.Contains(err.Error(), "explode") {
		t.Errorf("ParseFault(explode) error = %v; want one naming it", err)
	}
	var script struct{ Faults []agentoncetest.Fault }
	if err := json.Unmarshal([]byte(`{"Faults":["duplicate","none"]}`), &script); err != nil || len(script.Faults) != 2 || script.Faults[0] != agentoncetest.Duplicate {
		t.Errorf("unmarshal fault names = %v, %v; want [duplicate none]", script.Faults, err)
	}
}
