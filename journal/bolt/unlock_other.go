//go:build !unix || solaris

package bolt

import "os"

// unlockFile does nothing here: bbolt's lock on these systems is not a
// flock (LockFileEx on Windows, fcntl on Solaris), and ends when the file
// is closed.
func unlockFile(*os.File) {}
