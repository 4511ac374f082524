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

// peerUID returns the uid at the other end of c (SO_PEERCRED).
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

// reachable returns a path bind and connect accept for path: itself, or
// through its directory's descriptor (/proc/self/fd/N/name), closed by
// done.
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
