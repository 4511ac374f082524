package redis

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// serverClock estimates the server's clock between readings: the last
// TIME the script answered plus the monotonic time elapsed here since,
// lagging by about a round trip; the script refuses a decision whose clock
// is ahead or lags by more than maxClockLag (a stepped clock, a drift). It
// is safe for concurrent use.
type serverClock struct {
	last atomic.Pointer[clockReading]
}

// clockReading is one TIME and when its answer arrived here.
type clockReading struct {
	server, local time.Time
}

// observe records a reading of the server's clock that arrived at local.
func (c *serverClock) observe(server, local time.Time) {
	c.last.Store(&clockReading{server: server, local: local})
}

// estimate returns the server's clock now, or false before a reading.
func (c *serverClock) estimate() (time.Time, bool) {
	r := c.last.Load()
	if r == nil {
		return time.Time{}, false
	}
	return r.server.Add(time.Since(r.local)), true
}

// pendingMax bounds how many records a store remembers.
const pendingMax = 4096

// pendingRecords remembers the bytes of the pending records this store
// wrote last, so that the owner's next transition can compare-and-set
// without reading first: a stale guess costs a refused script, whose
// answer holds the record as it is. It is safe for concurrent use.
type pendingRecords struct {
	mu sync.Mutex
	m  map[uuid.UUID][]byte // guarded by mu
}

// remember records val as the bytes of key's pending record.
func (p *pendingRecords) remember(key uuid.UUID, val []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[uuid.UUID][]byte)
	}
	if _, ok := p.m[key]; !ok && len(p.m) >= pendingMax {
		for k := range p.m { // forget one at random: the guess is only a guess
			delete(p.m, k)
			break
		}
	}
	p.m[key] = val
}

func (p *pendingRecords) recall(key uuid.UUID) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[key]
	return v, ok
}

func (p *pendingRecords) forget(key uuid.UUID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}
