package powerloss

import "errors"

// ErrUnavailable is returned by Mount when this machine cannot mount a FUSE
// file system: /dev/fuse is missing or cannot be opened, or mounting is
// not permitted (not root, no fusermount). Tests skip on it.
var ErrUnavailable = errors.New("/dev/fuse not available: install fuse3 (apt-get install fuse3) and run as root")
