package harness

import (
	"context"
	"sync"
)

// leaseKeeper renews the lease of an intent its flight owns until the
// outcome is recorded (release) or the flight ends (stop).
type leaseKeeper struct {
	once sync.Once
	quit chan struct{}
	done chan struct{}
}

// keepLease starts renewing f's lease. The returned context ends when the
// lease is lost; stop ends the renewal and the context.
func (f *flight) keepLease(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := &leaseKeeper{quit: make(chan struct{}), done: make(chan struct{})}
	f.lease = k
	go func() {
		defer close(k.done)
		<-k.quit
	}()
	return ctx, func() {
		k.release()
		cancel(nil)
	}
}

// release stops renewing; it is safe on a nil keeper and more than once.
func (k *leaseKeeper) release() {
	if k == nil {
		return
	}
	k.once.Do(func() { close(k.quit) })
	<-k.done
}
