package inspect

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxSocketPath is the longest path bind and connect take (sun_path holds
// 108 bytes with the terminating NUL).
const maxSocketPath = 107

// peerUID returns the uid of the process at the other end of c, as the
// kernel recorded it when the connection was made (SO_PEERCRED).
func peerUID(c *net.UnixConn) (uid int, known bool, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var cred *syscall.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, false, err
	}
	if serr != nil {
		return 0, false, serr
	}
	return int(cred.Uid), true, nil
}

// reachable returns a path that bind and connect accept for path: path
// itself when it is short enough, else the same file reached through an
// open descriptor of its directory (/proc/self/fd/N/name), which done
// closes once the call is made.
func reachable(path string) (p string, done func(), err error) {
	if len(path) <= maxSocketPath {
		return path, func() {}, nil
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return "", nil, err
	}
	p = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + filepath.Base(path)
	if len(p) > maxSocketPath {
		dir.Close()
		return "", nil, &net.OpError{Op: "bind", Net: "unix", Err: syscall.ENAMETOOLONG}
	}
	return p, func() { dir.Close() }, nil
}
