package redis

import "time"

// SetClockReading makes s estimate the server's clock as server, as if
// that TIME had just arrived: a test's way to put the estimate off.
func SetClockReading(s *Store, server time.Time) { s.clock.observe(server, time.Now()) }
