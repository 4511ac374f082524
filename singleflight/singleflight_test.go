package singleflight_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentonce/agentonce/singleflight"
)

// contexts is the table every behaviour and benchmark runs under: fn runs
// on the starter's goroutine for a context that cannot be cancelled and on
// a goroutine of its own otherwise, and callers must not see the difference
// (the benchmarks show what it costs).
var contexts = []struct {
	name string
	ctx  func() (context.Context, context.CancelFunc)
}{
	{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
	{"cancelable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
}

type result struct {
	v      int
	err    error
	joined bool
}

func TestDoThousandCallersOneExecution(t *testing.T) {
	const callers = 1000
	for _, tc := range contexts {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tc.ctx()
				defer cancel()
				var g singleflight.Group[string, int]
				var runs atomic.Int32
				release := make(chan struct{})
				fn := func(context.Context) (int, error) {
					runs.Add(1)
					<-release
					return 42, nil
				}
				results := make([]result, callers)
				var wg sync.WaitGroup
				for i := range callers {
					wg.Go(func() {
						r := &results[i]
						r.v, r.err, r.joined = g.Do(ctx, "k", fn)
					})
				}
				// Every caller is now blocked: one inside fn, the rest joined.
				synctest.Wait()
				close(release)
				wg.Wait()

				if n := runs.Load(); n != 1 {
					t.Errorf("fn ran %d times for %d callers; want 1", n, callers)
				}
				starters := 0
				for i, r := range results {
					if r.v != 42 || r.err != nil {
						t.Errorf("caller %d: Do = %d, %v; want 42, nil", i, r.v, r.err)
					}
					if !r.joined {
						starters++
					}
				}
				if starters != 1 {
					t.Errorf("%d callers got joined = false; want 1", starters)
				}
			})
		})
	}
}

func TestDoWaiterLeavesFlightRunning(t *testing.T) {
	// Whichever caller leaves, starter or joiner, the flight goes on for
	// the other and its context stays live.
	tests := []struct {
		name              string
		starterBackground bool // the starter's ctx cannot end: fn runs on its goroutine
		leaver            string
	}{
		{"starter leaves", false, "starter"},
		{"joiner leaves", false, "joiner"},
		{"joiner leaves a starter running fn itself", true, "joiner"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g singleflight.Group[string, int]
				cause := errors.New("user hung up")
				starterCtx, cancelStarter := context.WithCancelCause(context.Background())
				defer cancelStarter(nil)
				if tc.starterBackground {
					starterCtx = context.Background()
				}
				joinerCtx, cancelJoiner := context.WithCancelCause(context.Background())
				defer cancelJoiner(nil)
				var runs atomic.Int32
				var fnCtxErr error
				release := make(chan struct{})
				fn := func(ctx context.Context) (int, error) {
					runs.Add(1)
					<-release
					fnCtxErr = ctx.Err()
					return 7, nil
				}

				var starter, joiner result
				var wg sync.WaitGroup
				wg.Go(func() { starter.v, starter.err, starter.joined = g.Do(starterCtx, "k", fn) })
				synctest.Wait()
				wg.Go(func() { joiner.v, joiner.err, joiner.joined = g.Do(joinerCtx, "k", fn) })
				synctest.Wait()

				left, stayed := &starter, &joiner
				cancel := cancelStarter
				if tc.leaver == "joiner" {
					left, stayed, cancel = &joiner, &starter, cancelJoiner
				}
				cancel(cause)
				synctest.Wait()
				// The leaver must be back before fn is released.
				if left.err == nil {
					t.Fatalf("%s still waiting after its context ended", tc.leaver)
				}
				if !errors.Is(left.err, cause) || left.v != 0 {
					t.Errorf("%s: Do = %d, %v; want 0, %v", tc.leaver, left.v, left.err, cause)
				}
				close(release)
				wg.Wait()
				if fnCtxErr != nil {
					t.Errorf("fn's context: Err() = %v; want nil while a caller waits", fnCtxErr)
				}
				if stayed.v != 7 || stayed.err != nil {
					t.Errorf("remaining caller: Do = %d, %v; want 7, nil", stayed.v, stayed.err)
				}
				if starter.joined || !joiner.joined {
					t.Errorf("joined: starter %v, joiner %v; want false, true", starter.joined, joiner.joined)
				}
				if n := runs.Load(); n != 1 {
					t.Errorf("fn ran %d times; want 1", n)
				}
			})
		})
	}
}

func TestDoFlightContextHasNoDeadline(t *testing.T) {
	// The starter's deadline is its own: the flight outlives it if others
	// still wait, so fn must not inherit it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var g singleflight.Group[string, bool]
	has, _, _ := g.Do(ctx, "k", func(ctx context.Context) (bool, error) {
		_, ok := ctx.Deadline()
		return ok, nil
	})
	if has {
		t.Error("fn's context has the starter's deadline; want none")
	}
}

func TestDoLastWaiterCancelsFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g singleflight.Group[string, int]
		type key struct{}
		first, cancelFirst := context.WithCancel(context.WithValue(context.Background(), key{}, "first"))
		second, cancelSecond := context.WithTimeout(context.Background(), time.Hour)
		defer cancelSecond()

		fnDone := make(chan struct{})
		var fnCause error
		var fnValue any
		fn := func(ctx context.Context) (int, error) {
			defer close(fnDone)
			fnValue = ctx.Value(key{})
			<-ctx.Done()
			fnCause = context.Cause(ctx)
			return 0, ctx.Err()
		}
		var wg sync.WaitGroup
		var errFirst, errSecond error
		wg.Go(func() { _, errFirst, _ = g.Do(first, "k", fn) })
		synctest.Wait()
		wg.Go(func() { _, errSecond, _ = g.Do(second, "k", fn) })
		synctest.Wait()

		cancelFirst()
		synctest.Wait()
		select {
		case <-fnDone:
			t.Fatal("flight cancelled while a caller was still waiting")
		default:
		}
		// The second caller's deadline passes: it is the last to leave.
		wg.Wait()
		<-fnDone

		if !errors.Is(errFirst, context.Canceled) {
			t.Errorf("first caller: err = %v; want context.Canceled", errFirst)
		}
		if !errors.Is(errSecond, context.DeadlineExceeded) {
			t.Errorf("second caller: err = %v; want context.DeadlineExceeded", errSecond)
		}
		if !errors.Is(fnCause, singleflight.ErrAbandoned) || !errors.Is(fnCause, context.DeadlineExceeded) {
			t.Errorf("fn's context cause = %v; want ErrAbandoned wrapping the last leaver's DeadlineExceeded", fnCause)
		}
		if fnValue != "first" {
			t.Errorf("fn's ctx.Value = %v; want the first caller's value %q", fnValue, "first")
		}
	})
}

func TestDoAbandonedFlightThenNewCaller(t *testing.T) {
	// After every caller left, fn (which ignores its context here) is still
	// running. A new caller must not run fn beside it; it shares a success
	// and starts over after a failure.
	tests := []struct {
		name      string
		abandoned error // what the abandoned flight returns
		wantV     int
		wantRuns  int32
		wantJoin  bool
	}{
		{"abandoned flight succeeds", nil, 1, 1, true},
		{"abandoned flight fails", context.Canceled, 2, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g singleflight.Group[string, int]
				var runs, running, maxRunning atomic.Int32
				release := make(chan struct{})
				fn := func(ctx context.Context) (int, error) {
					n := runs.Add(1)
					if r := running.Add(1); r > maxRunning.Load() {
						maxRunning.Store(r)
					}
					defer running.Add(-1)
					if n == 1 {
						<-release
						return 1, tc.abandoned
					}
					return int(n), nil
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { g.Do(ctx, "k", fn) })
				synctest.Wait()
				cancel()
				synctest.Wait()

				var late result
				wg.Go(func() { late.v, late.err, late.joined = g.Do(context.Background(), "k", fn) })
				synctest.Wait()
				if n := runs.Load(); n != 1 {
					t.Fatalf("fn ran %d times before the abandoned flight returned; want 1", n)
				}
				close(release)
				wg.Wait()

				if late.v != tc.wantV || late.err != nil || late.joined != tc.wantJoin {
					t.Errorf("late caller: Do = %d, %v, %v; want %d, nil, %v",
						late.v, late.err, late.joined, tc.wantV, tc.wantJoin)
				}
				if n := runs.Load(); n != tc.wantRuns {
					t.Errorf("fn ran %d times; want %d", n, tc.wantRuns)
				}
				if m := maxRunning.Load(); m != 1 {
					t.Errorf("fn ran %d times at once for one key; want 1", m)
				}
			})
		})
	}
}

func TestDoDoneContextDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g singleflight.Group[string, int]
		cause := errors.New("deadline budget spent")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		var ran atomic.Bool
		v, err, joined := g.Do(ctx, "k", func(context.Context) (int, error) { ran.Store(true); return 1, nil })
		synctest.Wait() // let a wrongly started fn run before looking
		if ran.Load() || v != 0 || !errors.Is(err, cause) || joined {
			t.Errorf("Do(done ctx) = %d, %v, %v, fn ran %v; want 0, %v, false, fn not run", v, err, joined, ran.Load(), cause)
		}
	})
}

func TestDoPanic(t *testing.T) {
	sentinel := errors.New("tool exploded")
	for _, tc := range contexts {
		for _, value := range []any{"boom", sentinel} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, value), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx, cancel := tc.ctx()
					defer cancel()
					var g singleflight.Group[string, int]
					release := make(chan struct{})
					fn := func(context.Context) (int, error) {
						<-release
						panicInTool(value)
						return 1, nil
					}
					errs := make([]error, 3)
					var wg sync.WaitGroup
					for i := range errs {
						wg.Go(func() { _, errs[i], _ = g.Do(ctx, "k", fn) })
					}
					synctest.Wait()
					close(release)
					wg.Wait()

					for i, err := range errs {
						var pe *singleflight.PanicError
						if !errors.As(err, &pe) {
							t.Fatalf("caller %d: err = %v (%T); want *PanicError", i, err, err)
						}
						if pe.Value != value {
							t.Errorf("caller %d: PanicError.Value = %v; want %v", i, pe.Value, value)
						}
						if !strings.Contains(string(pe.Stack), "panicInTool") {
							t.Errorf("caller %d: PanicError.Stack does not name the panicking function:\n%s", i, pe.Stack)
						}
						if strings.Contains(pe.Error(), "goroutine") {
							t.Errorf("caller %d: Error() = %q; want the value without the stack", i, pe.Error())
						}
						if got, want := errors.Is(err, sentinel), value == sentinel; got != want {
							t.Errorf("caller %d: errors.Is(err, sentinel) = %v; want %v", i, got, want)
						}
					}
					// The key is free and the Group still works.
					if v, err, _ := g.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil }); v != 2 || err != nil {
						t.Errorf("Do after a panic = %d, %v; want 2, nil", v, err)
					}
				})
			})
		}
	}
}

//go:noinline
func panicInTool(v any) { panic(v) }

func TestDoGoexit(t *testing.T) {
	for _, tc := range contexts {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tc.ctx()
				defer cancel()
				var g singleflight.Group[string, int]
				release := make(chan struct{})
				fn := func(context.Context) (int, error) {
					<-release
					runtime.Goexit()
					return 1, nil
				}
				var starterReturned, starterExited atomic.Bool
				var wg sync.WaitGroup
				wg.Go(func() {
					defer starterExited.Store(true)
					g.Do(ctx, "k", fn)
					starterReturned.Store(true)
				})
				synctest.Wait()
				joined := make([]result, 3)
				for i := range joined {
					wg.Go(func() { joined[i].v, joined[i].err, joined[i].joined = g.Do(ctx, "k", fn) })
				}
				synctest.Wait()
				close(release)
				wg.Wait()

				if starterReturned.Load() || !starterExited.Load() {
					t.Errorf("starter: returned %v, exited %v; want its goroutine to exit without returning",
						starterReturned.Load(), starterExited.Load())
				}
				for i, r := range joined {
					if !errors.Is(r.err, singleflight.ErrGoexit) || !r.joined {
						t.Errorf("joined caller %d: Do = %d, %v, %v; want 0, ErrGoexit, true", i, r.v, r.err, r.joined)
					}
				}
				if v, err, _ := g.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil }); v != 2 || err != nil {
					t.Errorf("Do after Goexit = %d, %v; want 2, nil", v, err)
				}
			})
		})
	}
}

func TestDoGoexitAfterStarterLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g singleflight.Group[string, int]
		starterCtx, cancelStarter := context.WithCancel(context.Background())
		release := make(chan struct{})
		fn := func(context.Context) (int, error) {
			<-release
			runtime.Goexit()
			return 1, nil
		}
		var starter, joiner result
		var wg sync.WaitGroup
		wg.Go(func() { starter.v, starter.err, starter.joined = g.Do(starterCtx, "k", fn) })
		synctest.Wait()
		wg.Go(func() { joiner.v, joiner.err, joiner.joined = g.Do(context.Background(), "k", fn) })
		synctest.Wait()
		cancelStarter()
		synctest.Wait()
		close(release)
		wg.Wait()
		if !errors.Is(starter.err, context.Canceled) {
			t.Errorf("starter that left: err = %v; want context.Canceled", starter.err)
		}
		if !errors.Is(joiner.err, singleflight.ErrGoexit) {
			t.Errorf("joiner: err = %v; want ErrGoexit", joiner.err)
		}
	})
}

func TestDoDistinctKeysRunInParallel(t *testing.T) {
	const keys = 50
	for _, tc := range contexts {
		t.Run(tc.name, func(t *testing.T) {
			// Each fn waits until every key's fn has started, so the test
			// only finishes if they run at the same time; if Do serialized
			// distinct keys, synctest would report the deadlock.
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tc.ctx()
				defer cancel()
				var g singleflight.Group[int, int]
				var started sync.WaitGroup
				started.Add(keys)
				var runs atomic.Int32
				results := make([]result, keys)
				var wg sync.WaitGroup
				for k := range keys {
					wg.Go(func() {
						r := &results[k]
						r.v, r.err, r.joined = g.Do(ctx, k, func(context.Context) (int, error) {
							runs.Add(1)
							started.Done()
							started.Wait()
							return k * 10, nil
						})
					})
				}
				wg.Wait()
				if n := runs.Load(); n != keys {
					t.Errorf("fn ran %d times for %d keys; want %d", n, keys, keys)
				}
				for k, r := range results {
					if r.v != k*10 || r.err != nil || r.joined {
						t.Errorf("key %d: Do = %d, %v, %v; want %d, nil, false", k, r.v, r.err, r.joined, k*10)
					}
				}
			})
		})
	}
}

func TestDoKeyFreeAfterFlight(t *testing.T) {
	for _, tc := range contexts {
		t.Run(tc.name, func(t *testing.T) {
			// In a bubble, a call stuck on a flight that never frees its
			// key is reported as a deadlock instead of hanging the test.
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tc.ctx()
				defer cancel()
				var g singleflight.Group[string, int]
				runs := 0
				fn := func(context.Context) (int, error) { runs++; return runs, nil }
				for want := 1; want <= 3; want++ {
					v, err, joined := g.Do(ctx, "k", fn)
					if v != want || err != nil || joined {
						t.Errorf("call %d: Do = %d, %v, %v; want %d, nil, false", want, v, err, joined, want)
					}
				}
			})
		})
	}
}

func TestDoErrorShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g singleflight.Group[string, int]
		want := errors.New("card declined")
		release := make(chan struct{})
		fn := func(context.Context) (int, error) { <-release; return 0, want }
		errs := make([]error, 5)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i], _ = g.Do(context.Background(), "k", fn) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, err := range errs {
			if err != want {
				t.Errorf("caller %d: err = %v; want %v", i, err, want)
			}
		}
	})
}

// TestDoHammer runs many callers over a few keys with contexts that end at
// random, and checks the invariants: fn never runs twice at once for one
// key, and every caller that did not leave got the result of a real
// execution for its key.
func TestDoHammer(t *testing.T) {
	const (
		goroutines = 64
		calls      = 200
		keys       = 4
	)
	var g singleflight.Group[int, int64]
	var running [keys]atomic.Int32
	var executions atomic.Int64
	var executed sync.Map // execution id → key

	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				key := rand.IntN(keys)
				ctx, cancel := context.WithCancel(context.Background())
				switch rand.IntN(4) {
				case 0:
					go cancel()
				case 1:
					ctx = context.Background() // fn runs on this goroutine if it starts
				}
				v, err, _ := g.Do(ctx, key, func(ctx context.Context) (int64, error) {
					if n := running[key].Add(1); n != 1 {
						t.Errorf("key %d: fn running %d times at once; want 1", key, n)
					}
					defer running[key].Add(-1)
					id := executions.Add(1)
					executed.Store(id, key)
					runtime.Gosched()
					return id, nil
				})
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Do = %v; want nil or context.Canceled", err)
					}
					continue
				}
				if k, ok := executed.Load(v); !ok || k != key {
					t.Errorf("key %d: got execution %d, which ran for key %v (found %v)", key, v, k, ok)
				}
			}
		})
	}
	wg.Wait()
	if n := executions.Load(); n == 0 || n > goroutines*calls {
		t.Errorf("%d executions for %d calls; want between 1 and %d", n, goroutines*calls, goroutines*calls)
	}
}
