package bolt

import (
	"runtime"
	"testing"
	"time"
)

// TestBootClockOrdersProcesses: a process that starts after another read
// its monotonic clock must read a later time, or it would take the other's
// last write for one of its own future and, for one, keep a dead owner's
// lease alive (internal/powerloss's restart saw "in progress elsewhere").
// A new process's first reading is bootClock's; the running one's is its
// hostMono's. With /proc/uptime's 10 ms steps, rounded up, the new process
// read a time behind the running one's as often as not.
func TestBootClockOrdersProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the boot clock is Linux's")
	}
	for i := range 1000 {
		h := newHostMono()
		running := h.base + time.Since(h.start)
		_, started, ok := bootClock()
		if !ok {
			t.Fatal("no boot clock on Linux")
		}
		if started < running {
			t.Fatalf("reading %d: a process starting now reads %v, behind the running one's %v by %v", i, started, running, running-started)
		}
	}
}
