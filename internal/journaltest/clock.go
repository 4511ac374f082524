package journaltest

import (
	"sync"
	"time"
)

// Clock is a fake clock for Options.Now. The zero value starts at Epoch.
// It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	t   time.Time // guarded by mu
	set bool      // guarded by mu
}

// Epoch is where a zero Clock starts: a whole second, so that stores with
// coarse timestamps keep every instant the suite produces.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set {
		c.t, c.set = Epoch, true
	}
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set {
		c.t, c.set = Epoch, true
	}
	c.t = c.t.Add(d)
	return c.t
}
