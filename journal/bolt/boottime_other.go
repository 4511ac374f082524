//go:build !linux

package bolt

import "time"

// bootTime is Linux's; elsewhere the boot clock is not read.
func bootTime() (time.Duration, bool) { return 0, false }
