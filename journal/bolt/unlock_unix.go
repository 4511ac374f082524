//go:build unix && !solaris

package bolt

import (
	"os"
	"syscall"
)

// unlockFile releases bbolt's flock on f, which a mapping of f would
// otherwise keep after f is closed.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
