package fibercompare

import (
	"context"
	"fmt"
	"net"
	"strconv"
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
//
// Two answers of a shared or busy server say how the server was used,
// not what the middleware costs. A NOSCRIPT answer (another user of the
// server flushed its script cache; the store sends the source next) ran
// nothing and is not a round trip. A journal/redis decision refused for
// its clock (the answer of the write before came more than the allowed
// lag after the server read TIME: an fsync slowed by other writers) is a
// round trip, counted in lateClock too: the decision is made again on the
// time the refusal answered, unless the records it answered settle it.
type trips struct {
	roundTrips atomic.Int64
	writes     atomic.Int64
	noScript   atomic.Int64
	lateClock  atomic.Int64
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
		err := next(ctx, cmd)
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			t.noScript.Add(1)
			return err
		}
		t.roundTrips.Add(1)
		if lateClock(cmd) {
			t.lateClock.Add(1)
		}
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

// lateClock reports a journal/redis script run refused because the
// decision's clock (ARGV[1], in microseconds) was not within the allowed
// lag (ARGV[2]) behind the server's TIME the refusal answered: the check
// the script makes, made again on what was sent and answered.
func lateClock(cmd goredis.Cmder) bool {
	if n := strings.ToLower(cmd.Name()); (n != "evalsha" && n != "eval") || !refused(cmd) {
		return false
	}
	args := cmd.Args()
	if len(args) < 3 {
		return false
	}
	nkeys, ok := integer(args[2])
	if !ok || len(args) < 5+int(nkeys) {
		return false
	}
	decided, ok1 := integer(args[3+nkeys])
	lag, ok2 := integer(args[4+nkeys])
	a := cmd.(interface{ Val() any }).Val().([]any)
	if len(a) < 3 {
		return false
	}
	sec, ok3 := integer(a[1])
	usec, ok4 := integer(a[2])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false // no clock sent: refused for its records
	}
	server := sec*1_000_000 + usec
	return decided > server || decided < server-lag
}

// integer reads an argument or answer that is an integer or its decimal
// string.
func integer(v any) (int64, bool) {
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	return n, err == nil
}

// snapshot returns the counts so far.
func (t *trips) snapshot() (roundTrips, writes int64) {
	return t.roundTrips.Load(), t.writes.Load()
}

// counts returns the counts so far, the late clocks with them.
func (t *trips) counts() count {
	return count{t.roundTrips.Load(), t.lateClock.Load(), t.writes.Load()}
}

// count is what counts returned, or the difference of two.
type count struct{ roundTrips, lateClock, writes int64 }

func (c count) minus(o count) count {
	return count{c.roundTrips - o.roundTrips, c.lateClock - o.lateClock, c.writes - o.writes}
}

// is reports whether c is roundTrips round trips and writes writes, where
// each decision refused for a late clock may have added one round trip.
func (c count) is(roundTrips, writes int64) bool {
	return c.writes == writes && c.roundTrips-c.lateClock <= roundTrips && roundTrips <= c.roundTrips
}

func (c count) String() string {
	s := fmt.Sprintf("%d round trips, %d writes", c.roundTrips, c.writes)
	if c.lateClock > 0 {
		s += fmt.Sprintf(" (%d refused for a late clock)", c.lateClock)
	}
	return s
}

// TestRoundTrips counts what each side sends Redis for a new key and for
// its replay: agentonce two round trips and two writes for a new key (the
// write-ahead Begin and the Complete, no read before them) and none for a
// replay by the server that answered (it keeps the answer), one round trip
// and no write for one by another server on the journal; Fiber three and
// one write, one and none. What a shared or busy server adds (trips) is
// allowed for and logged.
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
			before := c.side.trips.counts()
			if st, b := post(t, c.side.base, key, body); st != 200 {
				t.Fatalf("%s: %d %s", c.side.name, st, b)
			}
			if got := c.side.trips.counts().minus(before); !got.is(want[0], want[1]) {
				t.Errorf("%s, request %d: %v; want %d, %d",
					c.side.name, i+1, got, want[0], want[1])
			}
		}
	}
	// A retry that reaches another server on the journal.
	key := uuid.NewString()
	post(t, of.peer, key, body)
	before := of.trips.counts()
	if st, b := post(t, of.base, key, body); st != 200 {
		t.Fatalf("%s, retry through its peer: %d %s", of.name, st, b)
	}
	if got := of.trips.counts().minus(before); !got.is(1, 0) {
		t.Errorf("%s, a retry of a key its peer answered: %v; want 1, 0", of.name, got)
	}
	if n := of.effects.Load(); n != 3 {
		t.Errorf("%s: %d effects; want 3 (one a key)", of.name, n)
	}
	for _, s := range []side{f, a, of} {
		if n, l := s.trips.noScript.Load(), s.trips.lateClock.Load(); n+l > 0 {
			t.Logf("%s, of a busy or shared server: %d NOSCRIPT answers (not counted), %d decisions refused for a late clock", s.name, n, l)
		}
	}
}
