// fn runs on a goroutine of its own only when the starter's context can be
// cancelled: a starter that may leave cannot run fn, but the goroutine
// costs about seven times x/sync's distinct-key path (BenchmarkDistinct in
// BENCHMARKS.md), and a caller that can never leave need not pay it.

package singleflight

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Group collapses concurrent calls that share a key into one execution.
// Its zero value is ready to use. A Group is safe for concurrent use and
// must not be copied after first use.
type Group[K comparable, V any] struct {
	mu sync.Mutex       // guards m and every flight's mutable fields
	m  map[K]*flight[V] // flights running now; lazily made
}

// flight is one execution of fn for one key.
type flight[V any] struct {
	// val and err are written once, before done is closed (or the starter
	// running fn reads them), and read only after that.
	val    V
	err    error
	goexit bool // fn called runtime.Goexit

	// cancel cancels fn's context; nil when fn got the starter's own.
	// Set before fn starts, then only read.
	cancel context.CancelCauseFunc

	// These are guarded by Group.mu.
	done      chan struct{} // made when someone must wait; closed, outside the lock, once f is out of the map
	waiters   int           // callers still waiting, the starter included
	abandoned bool          // every waiter left and fn's context was cancelled
}

// Do runs fn once per key at a time and returns its result.
//
// A caller that arrives while a flight for key is running joins it and gets
// the flight's result; joined is false for the caller that started the
// flight and true for every caller that joined it. Once the flight returns
// the key is free: a later call runs fn again.
//
// fn gets the flight's context: the first caller's values, not its
// cancellation; it is cancelled only when every caller has left, with a
// cause that matches both [ErrAbandoned] and the last leaver's cause.
//
// A caller whose ctx ends returns at once with [context.Cause](ctx) and the
// zero V, leaving the flight running for the others. If ctx is already done
// when Do is called, fn is not run. Panics and [runtime.Goexit] are as the
// package documentation says.
func (g *Group[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (v V, err error, joined bool) {
	if ctx.Err() != nil {
		return v, context.Cause(ctx), false
	}
	for {
		g.mu.Lock()
		f, ok := g.m[key]
		if !ok {
			break // start a flight, still holding g.mu
		}
		if f.done == nil {
			f.done = make(chan struct{})
		}
		if !f.abandoned {
			f.waiters++
			g.mu.Unlock()
			return g.wait(ctx, f, true)
		}
		g.mu.Unlock()
		// The running flight is abandoned and its context cancelled. Wait
		// for it rather than run fn beside it: a success is shared; a
		// failure is likely the cancellation's, so start a new flight.
		select {
		case <-f.done:
		case <-ctx.Done():
			return v, context.Cause(ctx), true
		}
		if f.err == nil {
			return f.val, nil, true
		}
	}

	if g.m == nil {
		g.m = make(map[K]*flight[V])
	}
	f := &flight[V]{waiters: 1}
	g.m[key] = f
	if ctx.Done() == nil {
		// The caller can never leave early, so the flight can never be
		// abandoned: run fn here, with ctx itself.
		g.mu.Unlock()
		g.run(ctx, key, f, fn)
		return f.val, f.err, false
	}
	f.done = make(chan struct{})
	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	f.cancel = cancel
	g.mu.Unlock()
	go g.run(fctx, key, f, fn)
	return g.wait(ctx, f, false)
}

// wait blocks until f returns or ctx ends, whichever comes first.
func (g *Group[K, V]) wait(ctx context.Context, f *flight[V], joined bool) (v V, err error, _ bool) {
	if ctxDone := ctx.Done(); ctxDone == nil {
		<-f.done // a plain receive is cheaper than a select with a nil case
	} else {
		select {
		case <-f.done:
		case <-ctxDone:
			select {
			case <-f.done: // both ready: the result is worth more than the error
			default:
				g.leave(ctx, f)
				return v, context.Cause(ctx), joined
			}
		}
	}
	if f.goexit && !joined {
		// fn ran on another goroutine only because this caller might have
		// left early; end this goroutine as it would have ended had fn run
		// here, so the policy does not depend on the kind of ctx.
		runtime.Goexit()
	}
	return f.val, f.err, joined
}

// leave takes one waiter off f and cancels f's context if it was the last.
func (g *Group[K, V]) leave(ctx context.Context, f *flight[V]) {
	g.mu.Lock()
	f.waiters--
	last := f.waiters == 0 && f.cancel != nil
	if last {
		f.abandoned = true
	}
	g.mu.Unlock()
	if last {
		f.cancel(fmt.Errorf("%w: %w", ErrAbandoned, context.Cause(ctx)))
	}
}

// run calls fn, turns a panic or runtime.Goexit into f.err, then frees the
// key and wakes the waiters.
func (g *Group[K, V]) run(ctx context.Context, key K, f *flight[V], fn func(context.Context) (V, error)) {
	returned, recovered := false, false
	// The inner function recovers a panic (with its stack); the outer one
	// tells Goexit apart: after Goexit the code below the inner call never
	// runs.
	defer func() {
		if !returned && !recovered {
			f.err, f.goexit = ErrGoexit, true
		}
		if f.cancel != nil {
			f.cancel(nil) // release the context; fn is done with it
		}
		g.mu.Lock()
		delete(g.m, key) // f is the only flight for key until this line
		done := f.done   // nobody can find f to make or replace it any more
		g.mu.Unlock()
		// Wake the waiters outside the lock: with a thousand of them,
		// readying each one would otherwise hold up every other key.
		if done != nil {
			close(done)
		}
	}()
	func() {
		defer func() {
			if returned {
				return
			}
			if r := recover(); r != nil {
				var zero V
				f.val, f.err = zero, newPanicError(r)
			}
		}()
		f.val, f.err = fn(ctx)
		returned = true
	}()
	if !returned {
		recovered = true
	}
}
