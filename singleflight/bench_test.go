package singleflight_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentonce/agentonce/singleflight"
	xsync "golang.org/x/sync/singleflight"
)

// benchKeys are made before the timer starts so that both sides pay the
// same (nothing) for keys. Calls are sequential, so each is a new flight.
var benchKeys = func() []string {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "tool-call-" + strconv.Itoa(i)
	}
	return keys
}()

// BenchmarkDistinct measures a call that collapses with nothing: the cost
// paid by every call that has no duplicate.
func BenchmarkDistinct(b *testing.B) {
	for _, bc := range contexts {
		b.Run(bc.name, func(b *testing.B) {
			b.Run("agentonce", func(b *testing.B) {
				ctx, cancel := bc.ctx()
				defer cancel()
				var g singleflight.Group[string, int]
				fn := func(context.Context) (int, error) { return 1, nil }
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err, _ := g.Do(ctx, benchKeys[i%len(benchKeys)], fn); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("baseline", func(b *testing.B) {
				var g xsync.Group
				fn := func() (any, error) { return 1, nil }
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err, _ := g.Do(benchKeys[i%len(benchKeys)], fn); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}

const burstCallers = 1000

// burst runs b.N callers in bursts of burstCallers goroutines on one key and
// reports the cost per caller. fn holds the flight open until every caller
// of its burst has at least entered its call, so nearly all of them join
// one flight; flights/burst reports how many flights a burst really took.
//
// prepare returns a caller's call, made before the caller counts itself as
// arrived: a caller's closure escapes to the heap with agentonce (fn may
// outlive its caller) and not with x/sync, and an allocation between
// "arrived" and the call lets a GC assist park the caller just long enough
// to miss the flight, which would measure the GC rather than the Group.
func burst(b *testing.B, prepare func(fn func() int) func() int) {
	b.ReportAllocs()
	var flights atomic.Int64
	bursts := 0
	for n := 0; n < b.N; n += burstCallers {
		bursts++
		var arrived atomic.Int32
		all := make(chan struct{})
		fn := func() int {
			flights.Add(1)
			<-all
			return 1
		}
		var wg sync.WaitGroup
		for range burstCallers {
			wg.Go(func() {
				call := prepare(fn)
				if arrived.Add(1) == burstCallers {
					close(all)
				}
				if call() != 1 {
					b.Error("wrong result")
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(bursts*burstCallers), "ns/caller")
	b.ReportMetric(float64(flights.Load())/float64(bursts), "flights/burst")
}

// BenchmarkBurst measures burstCallers goroutines calling with one key at
// once; read ns/caller (ns/op counts b.N callers rounded up to whole bursts).
func BenchmarkBurst(b *testing.B) {
	for _, bc := range contexts {
		b.Run(bc.name, func(b *testing.B) {
			b.Run("agentonce", func(b *testing.B) {
				ctx, cancel := bc.ctx()
				defer cancel()
				var g singleflight.Group[string, int]
				burst(b, func(fn func() int) func() int {
					do := func(context.Context) (int, error) { return fn(), nil }
					return func() int {
						v, _, _ := g.Do(ctx, "k", do)
						return v
					}
				})
			})
			b.Run("baseline", func(b *testing.B) {
				var g xsync.Group
				burst(b, func(fn func() int) func() int {
					do := func() (any, error) { return fn(), nil }
					return func() int {
						v, _, _ := g.Do("k", do)
						return v.(int)
					}
				})
			})
		})
	}
}
