//go:build !linux

package inspect

import (
	"net"
	"syscall"
)

// maxSocketPath is the longest path bind and connect take on the BSDs and
// macOS (sun_path holds 104 bytes).
const maxSocketPath = 103

// peerUID cannot ask the kernel here: the socket's mode 0600 is the guard.
func peerUID(*net.UnixConn) (uid int, known bool, err error) { return 0, false, nil }

// reachable refuses a path too long for sun_path.
func reachable(path string) (string, func(), error) {
	if len(path) > maxSocketPath {
		return "", nil, &net.OpError{Op: "bind", Net: "unix", Err: syscall.ENAMETOOLONG}
	}
	return path, func() {}, nil
}
