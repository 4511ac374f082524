package redis

import "errors"

// ErrNotDurable is returned by Open and New when the server does not fsync
// every write (appendonly yes, appendfsync always) and
// Options.AllowUnsyncedWrites is false.
var ErrNotDurable = errors.New("journal/redis: the server does not fsync every write")
