package fibercompare

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
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

// TestRoundTrips counts what each side sends Redis for a new key and for
// its replay: agentonce two round trips and two writes for a new key (the
// write-ahead Begin and the Complete, no read before them) and none for a
// replay by the server that answered (it keeps the answer), one round trip
// and no write for one by another server on the journal; Fiber three and
// one write, one and none.
func TestRoundTrips(t *testing.T) {
	f, a, _, of := serversWithFloor(t)
	for _, c := range []struct {
		side                   side
		newTrips, newWrites    int64
		replayTrips, replayWri int64
	}{{f, 3, 1, 1, 0}, {a, 2, 2, 0, 0}, {of, 2, 2, 0, 0}} {
		post(t, c.side.base, uuid.NewString(), body) // the client's connection made
		key := uuid.NewString()
		for i, want := range [][2]int64{{c.newTrips, c.newWrites}, {c.replayTrips, c.replayWri}} {
			t0, w0 := c.side.trips.snapshot()
			if st, b := post(t, c.side.base, key, body); st != 200 {
				t.Fatalf("%s: %d %s", c.side.name, st, b)
			}
			t1, w1 := c.side.trips.snapshot()
			if t1-t0 != want[0] || w1-w0 != want[1] {
				t.Errorf("%s, request %d: %d round trips, %d writes; want %d, %d",
					c.side.name, i+1, t1-t0, w1-w0, want[0], want[1])
			}
		}
	}
	// A retry that reaches another server on the journal.
	key := uuid.NewString()
	post(t, of.peer, key, body)
	t0, w0 := of.trips.snapshot()
	if st, b := post(t, of.base, key, body); st != 200 {
		t.Fatalf("%s, retry through its peer: %d %s", of.name, st, b)
	}
	if t1, w1 := of.trips.snapshot(); t1-t0 != 1 || w1-w0 != 0 {
		t.Errorf("%s, a retry of a key its peer answered: %d round trips, %d writes; want 1, 0", of.name, t1-t0, w1-w0)
	}
	if n := of.effects.Load(); n != 3 {
		t.Errorf("%s: %d effects; want 3 (one a key)", of.name, n)
	}
}
