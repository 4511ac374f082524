package fibercompare

import (
	"context"
	"net"
	"strings"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// trips counts what a client sends: round trips (a command, or a
// pipeline or MULTI/EXEC block, is one), and writes, the round trips that
// change the data set. On a server with appendfsync always a write is
// answered after an fsync of the append-only file; under concurrency one
// fsync covers the writes of one event-loop iteration.
type trips struct {
	roundTrips atomic.Int64
	writes     atomic.Int64
}

var _ goredis.Hook = (*trips)(nil)

// writeCommands are the commands either middleware or store sends that
// write to the append-only file.
var writeCommands = map[string]bool{
	"set": true, "del": true, "exec": true, "eval": true, "evalsha": true,
	"zadd": true, "zrem": true, "sadd": true, "srem": true, "hsetnx": true,
}

func (t *trips) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (t *trips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		t.roundTrips.Add(1)
		err := next(ctx, cmd)
		if writeCommands[strings.ToLower(cmd.Name())] && !refused(cmd) {
			t.writes.Add(1)
		}
		return err
	}
}

func (t *trips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		t.roundTrips.Add(1)
		for _, c := range cmds {
			if writeCommands[strings.ToLower(c.Name())] {
				t.writes.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// refused reports a journal/redis script run that wrote nothing: its
// answer starts with 0 (the records differed from the decision's, or its
// clock from the server's).
func refused(cmd goredis.Cmder) bool {
	c, ok := cmd.(interface{ Val() any })
	if !ok {
		return false
	}
	a, ok := c.Val().([]any)
	return ok && len(a) > 0 && a[0] == int64(0)
}

// snapshot returns the counts so far.
func (t *trips) snapshot() (roundTrips, writes int64) {
	return t.roundTrips.Load(), t.writes.Load()
}
