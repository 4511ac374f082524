package retryclass_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

var (
	notExecuted = retryclass.Verdict{Class: retryclass.NotExecuted}
	maybe       = retryclass.Verdict{Class: retryclass.MaybeExecuted}
	inFlight    = retryclass.Verdict{Class: retryclass.InFlight, Status: 409}
)

// retryLoop drives s the way the harness does: after each failed try (all
// classified as v), ask Next, wait, try again. It returns the waits handed
// out and the instants each retry started, relative to start.
func retryLoop(t *testing.T, ctx context.Context, s *retryclass.Schedule, v retryclass.Verdict) (delays, starts []time.Duration) {
	t.Helper()
	start := time.Now()
	for i := 0; i < 1000; i++ {
		d, ok := s.Next(ctx, v)
		if !ok {
			return delays, starts
		}
		delays = append(delays, d)
		if err := retryclass.Wait(ctx, d); err != nil {
			t.Fatalf("Wait(%v) after %v = %v; Next promised the wait fits", d, time.Since(start), err)
		}
		starts = append(starts, time.Since(start))
	}
	t.Fatal("schedule never stopped")
	return nil, nil
}

func TestNextStopsOnClass(t *testing.T) {
	for _, c := range []retryclass.Class{retryclass.Success, retryclass.Mismatch, retryclass.Terminal, retryclass.Canceled} {
		s := (*retryclass.Policy)(nil).NewSchedule()
		if d, ok := s.Next(context.Background(), retryclass.Verdict{Class: c}); ok || d != 0 {
			t.Errorf("Next(%v) = %v, %v; want 0, false", c, d, ok)
		}
		if s.StopReason() != retryclass.StopClass || s.Attempts() != 1 {
			t.Errorf("after Next(%v): StopReason = %v, Attempts = %d; want class, 1", c, s.StopReason(), s.Attempts())
		}
	}
}

func TestNextStopsWhenContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := (*retryclass.Policy)(nil).NewSchedule()
	if _, ok := s.Next(ctx, notExecuted); ok || s.StopReason() != retryclass.StopDeadline {
		t.Errorf("Next(canceled ctx) = ok %v, reason %v; want false, deadline", ok, s.StopReason())
	}
}

func TestMaxAttemptsCountsTries(t *testing.T) {
	tests := []struct {
		maxAttempts int
		wantTries   int
	}{
		{0, retryclass.DefaultMaxAttempts},
		{1, 1},
		{3, 3},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			p := &retryclass.Policy{MaxAttempts: tt.maxAttempts, MaxElapsed: time.Hour}
			s := p.NewSchedule()
			delays, _ := retryLoop(t, context.Background(), s, maybe)
			if s.Attempts() != tt.wantTries || len(delays) != tt.wantTries-1 {
				t.Errorf("MaxAttempts %d: Attempts() = %d, retries = %d; want %d, %d", tt.maxAttempts, s.Attempts(), len(delays), tt.wantTries, tt.wantTries-1)
			}
			if s.StopReason() != retryclass.StopAttempts {
				t.Errorf("MaxAttempts %d: StopReason = %v; want attempts", tt.maxAttempts, s.StopReason())
			}
		})
	}
}

func TestBackoffSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &retryclass.Policy{
			MaxAttempts:     8,
			MaxElapsed:      time.Hour,
			InitialInterval: 100 * time.Millisecond,
			MaxInterval:     time.Second,
			Multiplier:      2,
			Jitter:          -1, // none: the sequence is exact
		}
		delays, starts := retryLoop(t, context.Background(), p.NewSchedule(), notExecuted)
		want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
		var at time.Duration
		for i := range want {
			want[i] *= time.Millisecond
		}
		if len(delays) != len(want) {
			t.Fatalf("delays = %v; want %v", delays, want)
		}
		for i := range want {
			at += want[i]
			if delays[i] != want[i] || starts[i] != at {
				t.Errorf("retry %d: delay %v at %v; want %v at %v", i+1, delays[i], starts[i], want[i], at)
			}
		}
	})
}

func TestJitterBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &retryclass.Policy{MaxElapsed: time.Hour, MaxAttempts: 6} // default jitter 0.5
		base := []float64{500, 750, 1125, 1687.5, 2531.25}             // ms: 500ms × 1.5^n
		lo := make([]time.Duration, len(base))
		hi := make([]time.Duration, len(base))
		for i := range lo {
			lo[i] = 1 << 62
		}
		for range 300 {
			delays, _ := retryLoop(t, context.Background(), p.NewSchedule(), notExecuted)
			if len(delays) != len(base) {
				t.Fatalf("%d delays; want %d", len(delays), len(base))
			}
			for i, d := range delays {
				w := base[i] * float64(time.Millisecond)
				if float64(d) < w*0.5-1 || float64(d) > w*1.5+1 {
					t.Errorf("retry %d: delay %v outside [%v, %v]", i+1, d, time.Duration(w*0.5), time.Duration(w*1.5))
				}
				lo[i], hi[i] = min(lo[i], d), max(hi[i], d)
			}
		}
		for i := range base {
			// 300 uniform draws: the spread is far above a quarter of the range
			// unless jitter is not applied at all.
			if spread := float64(hi[i] - lo[i]); spread < base[i]*float64(time.Millisecond)*0.25 {
				t.Errorf("retry %d: delays span only %v..%v; jitter not applied", i+1, lo[i], hi[i])
			}
		}
	})
}

func TestRetryAfterHonouredAndCapped(t *testing.T) {
	tests := []struct {
		name          string
		maxRetryAfter time.Duration
		retryAfter    time.Duration
		want          time.Duration
	}{
		{"honoured", 0, 3 * time.Second, 3 * time.Second},
		{"capped by default", 0, time.Minute, retryclass.DefaultMaxRetryAfter},
		{"capped", 2 * time.Second, 7 * time.Second, 2 * time.Second},
		{"ignored", -1, 7 * time.Second, 100 * time.Millisecond},
		{"none: backoff", 0, 0, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			p := &retryclass.Policy{MaxRetryAfter: tt.maxRetryAfter, InitialInterval: 100 * time.Millisecond, Jitter: -1}
			s := p.NewSchedule()
			start := time.Now()
			d, ok := s.Next(context.Background(), retryclass.Verdict{Class: retryclass.NotExecuted, RetryAfter: tt.retryAfter, Status: 429})
			if !ok || d != tt.want {
				t.Fatalf("%s: Next(retry after %v) = %v, %v; want %v, true", tt.name, tt.retryAfter, d, ok, tt.want)
			}
			retryclass.Wait(context.Background(), d)
			if got := time.Since(start); got != tt.want {
				t.Errorf("%s: next try at %v; want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestRetryAfterNeverPastCallerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		s := (*retryclass.Policy)(nil).NewSchedule()
		if d, ok := s.Next(ctx, retryclass.Verdict{Class: retryclass.NotExecuted, RetryAfter: 5 * time.Second}); ok {
			t.Fatalf("Next(retry after 5s, 4s left) = %v, true; want stop", d)
		}
		if s.StopReason() != retryclass.StopDeadline {
			t.Errorf("StopReason = %v; want deadline", s.StopReason())
		}
	})
}

func TestElapsedBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &retryclass.Policy{
			MaxAttempts:     -1, // only the elapsed budget stops it
			MaxElapsed:      2 * time.Second,
			InitialInterval: 500 * time.Millisecond,
			Multiplier:      1,
			Jitter:          -1,
		}
		s := p.NewSchedule()
		_, starts := retryLoop(t, context.Background(), s, maybe)
		// Retries start at 0.5, 1.0, 1.5 and 2.0s; one at 2.5s would pass 2s.
		if len(starts) != 4 || starts[3] != 2*time.Second {
			t.Errorf("retries started at %v; want 4, the last at 2s", starts)
		}
		if s.StopReason() != retryclass.StopElapsed || s.Attempts() != 5 {
			t.Errorf("StopReason = %v, Attempts = %d; want elapsed, 5", s.StopReason(), s.Attempts())
		}
	})
}

func TestElapsedBudgetWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &retryclass.Policy{MaxAttempts: -1, MaxElapsed: 7 * time.Second}
		for range 200 {
			s := p.NewSchedule()
			_, starts := retryLoop(t, context.Background(), s, notExecuted)
			if n := len(starts); n == 0 || starts[n-1] > p.MaxElapsed {
				t.Fatalf("retries started at %v; want the last within %v", starts, p.MaxElapsed)
			}
			if s.StopReason() != retryclass.StopElapsed {
				t.Fatalf("StopReason = %v; want elapsed", s.StopReason())
			}
		}
	})
}

func TestCallerDeadlineNeverExceeded(t *testing.T) {
	verdicts := []retryclass.Verdict{notExecuted, inFlight, maybe, {Class: retryclass.NotExecuted, RetryAfter: time.Second}}
	synctest.Test(t, func(t *testing.T) {
		for _, budget := range []time.Duration{time.Millisecond, 300 * time.Millisecond, 1300 * time.Millisecond, 4 * time.Second} {
			for _, v := range verdicts {
				for range 50 {
					ctx, cancel := context.WithTimeout(context.Background(), budget)
					dl, _ := ctx.Deadline()
					s := (&retryclass.Policy{MaxAttempts: -1, MaxElapsed: time.Hour}).NewSchedule()
					_, starts := retryLoop(t, ctx, s, v) // fails if a Wait is cut short by the deadline
					if !time.Now().Before(dl) {
						t.Fatalf("deadline %v, %v: a retry started %v past it (retries at %v)", budget, v, time.Since(dl), starts)
					}
					if s.StopReason() != retryclass.StopDeadline {
						t.Fatalf("deadline %v, %v: StopReason = %v; want deadline", budget, v, s.StopReason())
					}
					cancel()
				}
			}
		}
	})
}

func TestInFlightBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &retryclass.Policy{
			MaxAttempts:     2, // in-flight polls do not count against it
			InFlightBudget:  2 * time.Second,
			InitialInterval: 500 * time.Millisecond,
			Multiplier:      2,
			Jitter:          -1,
		}
		s := p.NewSchedule()
		delays, _ := retryLoop(t, context.Background(), s, inFlight)
		want := []time.Duration{500 * time.Millisecond, time.Second, 500 * time.Millisecond} // the last cut to what is left
		if len(delays) != len(want) || delays[0] != want[0] || delays[1] != want[1] || delays[2] != want[2] {
			t.Fatalf("in-flight delays = %v; want %v", delays, want)
		}
		if s.StopReason() != retryclass.StopInFlight || s.Attempts() != 4 {
			t.Errorf("StopReason = %v, Attempts = %d; want in-flight, 4", s.StopReason(), s.Attempts())
		}
		// The in-flight budget is spent, but the attempt budget is not.
		if _, ok := s.Next(context.Background(), notExecuted); !ok {
			t.Errorf("Next(not-executed) after in-flight polls = stop (%v); want one retry left", s.StopReason())
		}
		if _, ok := s.Next(context.Background(), notExecuted); ok || s.StopReason() != retryclass.StopAttempts {
			t.Errorf("second Next(not-executed) = %v (%v); want stop, attempts", ok, s.StopReason())
		}
	})
	s := (&retryclass.Policy{InFlightBudget: -1}).NewSchedule()
	if _, ok := s.Next(context.Background(), inFlight); ok || s.StopReason() != retryclass.StopInFlight {
		t.Errorf("InFlightBudget -1: Next(in-flight) = %v (%v); want stop, in-flight", ok, s.StopReason())
	}
}

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := retryclass.Wait(context.Background(), 3*time.Second); err != nil || time.Since(start) != 3*time.Second {
			t.Errorf("Wait(3s) = %v after %v; want nil after 3s", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if err := retryclass.Wait(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Wait(1m, 1s deadline) = %v after %v; want DeadlineExceeded after 1s", err, time.Since(start))
		}
		if err := retryclass.Wait(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait(done ctx, 0) = %v; want DeadlineExceeded", err)
		}
		if err := retryclass.Wait(context.Background(), -time.Second); err != nil {
			t.Errorf("Wait(-1s) = %v; want nil", err)
		}
	})
}

func TestPolicyVerdict(t *testing.T) {
	err := errors.New("boom")
	if got := (*retryclass.Policy)(nil).Verdict(context.Background(), err); got.Class != retryclass.MaybeExecuted {
		t.Errorf("nil Policy: Verdict(boom) = %v; want maybe-executed", got)
	}
	p := &retryclass.Policy{Classify: func(ctx context.Context, err error) retryclass.Verdict {
		v := retryclass.ClassifyContext(ctx, err)
		if v.Status == 503 {
			v.Class = retryclass.NotExecuted
		}
		return v
	}}
	if got := p.Verdict(context.Background(), &retryclass.StatusError{Status: 503}); got.Class != retryclass.NotExecuted {
		t.Errorf("override: Verdict(503) = %v; want not-executed", got)
	}
}

func TestBudgetLimitsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retryclass.NewBudget(&retryclass.BudgetOptions{Ratio: 0.5, MinPerSecond: -1, Window: 10 * time.Second})
		p := &retryclass.Policy{Budget: b, MaxAttempts: -1, MaxElapsed: -1}
		var scheds []*retryclass.Schedule
		for range 10 {
			scheds = append(scheds, p.NewSchedule())
		}
		granted := 0
		for _, s := range scheds {
			if _, ok := s.Next(context.Background(), notExecuted); ok {
				granted++
			} else if s.StopReason() != retryclass.StopBudget {
				t.Fatalf("StopReason = %v; want budget", s.StopReason())
			}
		}
		if granted != 5 {
			t.Errorf("10 calls at ratio 0.5: %d retries granted; want 5", granted)
		}
		// After the window, the old calls and retries no longer count.
		retryclass.Wait(context.Background(), 11*time.Second)
		s := p.NewSchedule()
		if _, ok := s.Next(context.Background(), notExecuted); ok {
			t.Errorf("one call at ratio 0.5 after the window: retry granted; want refused")
		}
		p.NewSchedule()
		if _, ok := s.Next(context.Background(), notExecuted); !ok {
			t.Errorf("two calls at ratio 0.5 after the window: retry refused (%v); want granted", s.StopReason())
		}
	})
}

// TestBudgetHammer checks under -race that concurrent schedules get
// exactly the retries the budget allows: never more, and all of them.
func TestBudgetHammer(t *testing.T) {
	const calls = 400
	// A day-long window, so that it cannot move on during the test: the
	// allowance is 0.25 × 400 calls + 5 (the floor over the day) = 105.
	b := retryclass.NewBudget(&retryclass.BudgetOptions{Ratio: 0.25, MinPerSecond: 5.0 / 86400, Window: 24 * time.Hour})
	p := &retryclass.Policy{Budget: b, MaxAttempts: -1, MaxElapsed: -1, InitialInterval: time.Nanosecond, Jitter: -1}
	scheds := make([]*retryclass.Schedule, calls)
	var wg sync.WaitGroup
	for i := range scheds {
		wg.Go(func() { scheds[i] = p.NewSchedule() })
	}
	wg.Wait()
	var granted, refused atomic.Int64
	for _, s := range scheds {
		wg.Go(func() {
			for range 3 {
				if _, ok := s.Next(context.Background(), notExecuted); ok {
					granted.Add(1)
				} else if s.StopReason() == retryclass.StopBudget {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if g, r := granted.Load(), refused.Load(); g != 105 || g+r != 3*calls {
		t.Errorf("granted %d, refused %d; want 105 and %d", g, r, 3*calls-105)
	}
}
