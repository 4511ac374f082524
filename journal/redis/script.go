package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// This file is the one way a transition writes: the compare-and-set script
// of the package documentation. Every decision stays in Go; the script
// compares and copies.

// casSource is the script. KEYS: the creation index, the expiry index,
// the nc record keys checked, a (record key, guard set) pair per record
// written, and last, when guard checking is on, the guard set checked.
// ARGV: the decision's clock in microseconds ("" when a test clock stands
// in for the server's), the clock's allowed lag in microseconds, the
// store's key prefix, nc, then per check a flag ("a" absent, "v" the value
// that follows, "?" unknown: always a mismatch) and a value; then the
// guard mode ("" off, else the number of members expected, followed by
// each member's id and record value); then per record written its id,
// creation and expiry scores ("" when the record checked has it), "1"
// when suppressed ("0" when not, "" to leave the guard set alone: a
// spread journal's lies in another slot, or the record checked was as
// suppressed; its KEYS entry then repeats the record's), and its bytes.
// The indexes are those of the one tag the keys checked and written share.
//
// It answers {1, seconds, microseconds} of TIME when it wrote, and {0,
// seconds, microseconds, the nc values of the checked keys, then per
// member of the guard set its id and its record} when it did not: one flat
// array (a nested table costs the server about a GET). Every check runs
// before the first write: a refused transition leaves nothing behind.
const casSource = `
local t = redis.call('TIME')
local tus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ok = true
if ARGV[1] ~= '' then
  local n = tonumber(ARGV[1])
  ok = n <= tus and n >= tus - tonumber(ARGV[2])
end
local prefix = ARGV[3]
local nc = tonumber(ARGV[4])
local a = 5
local vals = {}
for i = 1, nc do
  local flag, want = ARGV[a], ARGV[a + 1]
  a = a + 2
  if ok then
    local v = redis.call('GET', KEYS[2 + i])
    vals[i] = v
    if flag == 'a' then
      ok = v == false
    elseif flag == 'v' then
      ok = v == want
    else
      ok = false
    end
  end
end
local gmode = ARGV[a]
a = a + 1
local guard = nil
if gmode ~= '' then
  guard = KEYS[#KEYS]
  local ng = tonumber(gmode)
  if ok and redis.call('SCARD', guard) ~= ng then
    ok = false
  end
  for i = 1, ng do
    local id, want = ARGV[a], ARGV[a + 1]
    a = a + 2
    if ok then
      ok = redis.call('SISMEMBER', guard, id) == 1 and redis.call('GET', prefix .. 'r:' .. id) == want
    end
  end
end
if not ok then
  local out = {0, t[1], t[2]}
  for i = 1, nc do
    local v = vals[i]
    if v == nil then
      v = redis.call('GET', KEYS[2 + i])
    end
    out[3 + i] = v
  end
  if guard then
    local ids = redis.call('SMEMBERS', guard)
    local o = 3 + nc
    for i = 1, #ids do
      out[o + 1] = ids[i]
      out[o + 2] = redis.call('GET', prefix .. 'r:' .. ids[i])
      o = o + 2
    end
  end
  return out
end
local k = 2 + nc
while a <= #ARGV do
  local id = ARGV[a]
  local rk, gk = KEYS[k + 1], KEYS[k + 2]
  k = k + 2
  redis.call('SET', rk, ARGV[a + 4])
  if ARGV[a + 1] ~= '' then
    redis.call('ZADD', KEYS[1], ARGV[a + 1], id)
  end
  if ARGV[a + 2] ~= '' then
    redis.call('ZADD', KEYS[2], ARGV[a + 2], id)
  end
  if ARGV[a + 3] == '1' then
    redis.call('SADD', gk, id)
  elseif ARGV[a + 3] == '0' then
    redis.call('SREM', gk, id)
  end
  a = a + 5
end
return {1, t[1], t[2]}
`

// casSHA is the script's SHA1, its name for EVALSHA.
var casSHA = func() string {
	h := sha1.Sum([]byte(casSource))
	return hex.EncodeToString(h[:])
}()

// maxClockLag is how far behind the server's clock, never ahead, a
// decision's clock may be when the script writes it: a lease it grants
// runs out at most this much early. A decision lagging more is made again.
const maxClockLag = 25 * time.Millisecond

// check is one record a decision read, and what it found: absent (val
// nil), a value, or not known yet.
type check struct {
	key   uuid.UUID
	known bool
	val   []byte          // the record's bytes; nil when absent
	rec   *journal.Record // val decoded; nil when absent
}

// guardEntry is one member of a guard set, with its record's bytes (nil
// when the member's record is gone) and the record decoded.
type guardEntry struct {
	id  string
	val []byte
	rec *journal.Record
}

// casResult is the script's answer: whether it wrote, the server's
// clock, and when it did not write what it found.
type casResult struct {
	wrote bool
	now   time.Time
	vals  [][]byte // per check, nil when absent
	guard []guardEntry
}

// onceCmd is a command the client must not send again after a failure:
// a write whose reply was lost may have been applied, and a second
// compare-and-set would then find the first's result and decide on it as
// another writer's. Its error says the outcome is unknown instead.
type onceCmd struct{ *goredis.Cmd }

// NoRetry tells the client not to resend the command.
func (onceCmd) NoRetry() bool { return true }

// write is a record to store and its bytes.
type write struct {
	rec *journal.Record
	val []byte
}

// encode returns the writes that store recs.
func encode(recs ...*journal.Record) []write {
	w := make([]write, len(recs))
	for i, r := range recs {
		r.Version = journal.SchemaVersion
		w[i] = write{rec: r, val: codec.Encode(nil, r)}
	}
	return w
}

// cas runs the script: checks (and the guard set's expected members, when
// guard is not empty) compared, then writes stored. now is the decision's
// clock (ignored under a test clock). The command is built in one slice,
// with the values every run sends boxed once, in New.
func (s *Store) cas(ctx context.Context, now time.Time, checks []check, guard string, guardWant []guardEntry, writes []write) (casResult, error) {
	nkeys := 2 + len(checks) + 2*len(writes)
	if guard != "" {
		nkeys++
	}
	cmd := make([]any, 3+nkeys, 3+nkeys+6+2*len(checks)+2*len(guardWant)+5*len(writes))
	keys := cmd[3:3]
	var t int
	if len(checks) > 0 {
		t = s.tag(checks[0].key)
	} else if len(writes) > 0 {
		t = s.tag(writes[0].rec.Key)
	}
	keys = append(keys, s.idx[t][0], s.idx[t][1])
	args := cmd[3+nkeys:]
	var clock any = ""
	if s.testNow == nil {
		clock = strconv.FormatInt(now.UnixMicro(), 10)
	}
	args = append(args, clock, lagArg, s.prefixArg, len(checks))
	for i := range checks {
		c := &checks[i]
		keys = append(keys, s.recordKey(c.key))
		switch {
		case !c.known:
			args = append(args, "?", "")
		case c.val == nil:
			args = append(args, "a", "")
		default:
			args = append(args, "v", c.val)
		}
	}
	if guard == "" {
		args = append(args, "")
	} else {
		args = append(args, len(guardWant))
		for _, g := range guardWant {
			args = append(args, g.id, g.val)
		}
	}
	for _, w := range writes {
		r := w.rec
		rk := s.recordKey(r.Key)
		var created, expires, sup any = r.Created.UnixMicro(), r.Expires.UnixMicro(), "0"
		if r.State == journal.StateSuppressed {
			sup = "1"
		}
		// The record the script finds when it writes is the one checked:
		// its index entries and guard set membership need no rewrite.
		if prev := (&view{checks: checks}).find(r.Key); prev != nil && prev.known {
			if prev.rec != nil && prev.rec.Created.UnixMicro() == created {
				created = ""
			}
			if prev.rec != nil && prev.rec.Expires.UnixMicro() == expires {
				expires = ""
			}
			if (prev.rec != nil && prev.rec.State == journal.StateSuppressed) == (sup == "1") {
				sup = ""
			}
		}
		if s.spread() || sup == "" {
			keys, sup = append(keys, rk, rk), ""
		} else {
			keys = append(keys, rk, s.guardKey(r.Intent.Tenant, r.Intent.Session, r.Intent.Tool))
		}
		// The record's id is the key's canonical text, the record key's tail.
		args = append(args, rk[len(rk)-36:], created, expires, sup, w.val)
	}
	if guard != "" {
		keys = append(keys, guard)
	}
	cmd = append(cmd[:3+nkeys], args...) // in place unless args outgrew cmd
	reply, err := s.eval(ctx, len(writes) > 0, cmd, nkeys)
	if err != nil {
		return casResult{}, err
	}
	return parseCAS(reply, len(checks))
}

// lagArg is maxClockLag in microseconds, boxed once.
var lagArg any = maxClockLag.Microseconds()

// casSHAArg is casSHA, boxed once.
var casSHAArg any = casSHA

// eval runs the script by its SHA1, or its source on NOSCRIPT. cmd holds
// three free slots (verb, script, key count), nkeys keys, the arguments.
// A write is sent once (onceCmd), on a cluster again when it did not run
// (notRun), and with Options.Replicas followed by WAIT on its connection.
func (s *Store) eval(ctx context.Context, write bool, cmd []any, nkeys int) (v any, err error) {
	cc, cluster := s.c.(*goredis.ClusterClient)
	for try := 0; ; try++ {
		if write && s.replicas > 0 {
			v, err = s.evalWait(ctx, cmd, nkeys)
		} else {
			v, err = s.evalOnce(ctx, s.c, write, cmd, nkeys)
		}
		if !cluster || !notRun(err) || try == notRunTries {
			return v, err
		}
		if try > 0 {
			cc.ReloadState(ctx)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(notRunPause):
		}
	}
}

// notRunTries and notRunPause bound the retries of a script the cluster
// refused without running it: a slot moving, a master failing over
// (cluster-node-timeout and an election: seconds).
const (
	notRunTries = 200
	notRunPause = 50 * time.Millisecond
)

// notRun reports an answer that says the script did not run: the slot is
// elsewhere or moving (MOVED, ASK, TRYAGAIN), the cluster cannot serve it
// (CLUSTERDOWN), a master is read-only now (READONLY: demoted), or no
// connection could be made.
func notRun(err error) bool {
	var op *net.OpError
	return err != nil && (goredis.HasErrorPrefix(err, "MOVED") || goredis.HasErrorPrefix(err, "ASK") ||
		goredis.HasErrorPrefix(err, "TRYAGAIN") || goredis.HasErrorPrefix(err, "CLUSTERDOWN") ||
		goredis.HasErrorPrefix(err, "READONLY") || (errors.As(err, &op) && op.Op == "dial"))
}

// evalOnce runs the script once on c.
func (s *Store) evalOnce(ctx context.Context, c interface {
	Process(context.Context, goredis.Cmder) error
}, write bool, cmd []any, nkeys int) (any, error) {
	run := func(verb string, script any) (any, error) {
		cmd[0], cmd[1], cmd[2] = verb, script, nkeys
		c2 := goredis.NewCmd(ctx, cmd...)
		var cm goredis.Cmder = c2
		if write {
			cm = onceCmd{c2}
		}
		_ = c.Process(ctx, cm)
		return c2.Result()
	}
	v, err := run("evalsha", casSHAArg)
	if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = run("eval", casSource)
	}
	return v, err
}

// evalWait runs the script and then WAIT on one connection to the master
// of its slot, so that WAIT counts the replicas holding its writes. A
// write that fewer replicas acknowledged is on the master only: the
// error says its outcome is uncertain, since a failover now would lose it.
func (s *Store) evalWait(ctx context.Context, cmd []any, nkeys int) (any, error) {
	var node *goredis.Client
	switch c := s.c.(type) {
	case *goredis.Client:
		node = c
	case *goredis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, cmd[3].(string)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("journal/redis: Options.Replicas needs a *redis.Client or *redis.ClusterClient, not %T", s.c)
	}
	conn := node.Conn()
	defer conn.Close()
	v, err := s.evalOnce(ctx, conn, true, cmd, nkeys)
	if a, ok := v.([]any); err != nil || !ok || len(a) == 0 || a[0] != int64(1) {
		return v, err // wrote nothing: nothing to wait for
	}
	n, err := conn.Wait(ctx, s.replicas, time.Duration(s.waitMS)*time.Millisecond).Result()
	if err == nil && n < int64(s.replicas) {
		err = fmt.Errorf("%w: written on the master, acknowledged by %d of %d replicas within %d ms: a failover now could lose it",
			journal.ErrOutcomeUncertain, n, s.replicas, s.waitMS)
	}
	return v, err
}

// parseCAS reads the script's answer to a run that checked nc keys.
func parseCAS(reply any, nc int) (casResult, error) {
	bad := func() (casResult, error) {
		return casResult{}, fmt.Errorf("journal/redis: unexpected script reply %v", reply)
	}
	a, ok := reply.([]any)
	if !ok || len(a) < 3 {
		return bad()
	}
	wrote, ok1 := a[0].(int64)
	sec, ok2 := toInt(a[1])
	usec, ok3 := toInt(a[2])
	if !ok1 || !ok2 || !ok3 {
		return bad()
	}
	res := casResult{wrote: wrote == 1, now: time.Unix(sec, usec*1000)}
	if res.wrote {
		return res, nil
	}
	rest := a[3:]
	if len(rest) < nc || (len(rest)-nc)%2 != 0 {
		return bad()
	}
	res.vals = make([][]byte, nc)
	for i := range nc {
		res.vals[i] = bulk(rest[i])
	}
	members := rest[nc:]
	res.guard = make([]guardEntry, len(members)/2)
	for i := range res.guard {
		id, ok := members[2*i].(string)
		if !ok {
			return bad()
		}
		res.guard[i] = guardEntry{id: id, val: bulk(members[2*i+1])}
	}
	return res, nil
}

// toInt reads an integer the script answered as a string or an integer.
func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// bulk is a bulk string of the script's answer as bytes; nil for a nil
// (an absent key).
func bulk(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	return nil
}
