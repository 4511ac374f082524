package journaltest

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// Clock is a fake clock for Options.Now and Options.Monotonic. The zero
// value starts at Epoch. Advance moves both readings, as real time does;
// Jump moves the wall clock alone, as a host whose clock is set does. It
// is safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	t    time.Time     // the true time; guarded by mu
	jump time.Duration // the wall clock's error; guarded by mu
	set  bool          // guarded by mu
}

// Epoch is where a zero Clock starts: a whole second, so that stores with
// coarse timestamps keep every instant the suite produces.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ClockEpoch is the epoch of every Clock's Monotonic readings: one fake
// boot, so that a store reopened with a Clock finds the readings of its
// last open comparable.
var ClockEpoch = uuid.MustParse("6a6f7572-6e61-4c74-8573-74636c6f636b")

// Now returns the wall clock's time: the true time plus every Jump.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return c.t.Add(c.jump)
}

// Monotonic returns ClockEpoch and the true time elapsed since Epoch,
// which Jump does not move.
func (c *Clock) Monotonic() (uuid.UUID, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return ClockEpoch, c.t.Sub(Epoch)
}

// Advance moves the clock forward by d (both readings) and returns the
// new wall time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.t = c.t.Add(d)
	return c.t.Add(c.jump)
}

// Jump sets the wall clock d away from where it is (forward or backward),
// leaving Monotonic as it is, and returns the new wall time.
func (c *Clock) Jump(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.jump += d
	return c.t.Add(c.jump)
}

// init starts a zero clock at Epoch. c.mu is held.
func (c *Clock) init() {
	if !c.set {
		c.t, c.set = Epoch, true
	}
}
