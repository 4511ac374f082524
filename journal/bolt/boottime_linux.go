package bolt

import (
	"syscall"
	"time"
	"unsafe"
)

// clockBoottime is Linux's CLOCK_BOOTTIME: the time since boot, suspensions
// included.
const clockBoottime = 7

// bootTime reads CLOCK_BOOTTIME, to the nanosecond. Two processes' readings
// are thus in the order they were taken, which /proc/uptime's hundredths
// of a second are not: a process started within 10 ms of another's write
// could read a boot time behind that write's, and take the write for one
// of its own future (TestBootClockOrdersProcesses).
func bootTime() (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
