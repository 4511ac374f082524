package redis

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// layoutVersion is the newest key layout this package writes, kept in the
// meta hash: 1 is one hash tag, 2 (a journal created on a cluster) spreads
// over spreadTags (docs/redis.md, "Layout").
const layoutVersion = 2

// spreadTags is how many hash tags a layout-2 journal spreads over.
const spreadTags = 64

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "agentonce"

// maxTxRetries bounds the retries of one write whose keys another writer
// changed meanwhile (each retry is another writer's progress).
const maxTxRetries = 1000

// Options configures a Redis store. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Journal holds the options common to every store (Namespace,
	// ReadOnly, Now); the zero value means defaults. Its Now, when set, stands in for
	// the server's clock.
	Journal journal.Options

	// Prefix is the first part of every key the store writes, inside a
	// hash tag: "{agentonce}:…" on one server, "{agentonce:NN}:…" on a
	// cluster. Two journals on one server need two prefixes. Empty means
	// DefaultPrefix.
	Prefix string

	// Replicas is how many replicas must acknowledge each write (WAIT)
	// before the store answers, so that it survives a failover; fewer
	// within ReplicaTimeout is journal.ErrOutcomeUncertain. 0 refuses a
	// cluster with replicas (ErrNotDurable). The location's replicas=N too.
	Replicas int

	// ReplicaTimeout bounds the wait for Replicas; 0 means one second.
	ReplicaTimeout time.Duration

	// AllowUnsyncedWrites opens a server without appendonly yes and
	// appendfsync always, which may lose a write-ahead record on a crash
	// and run an Unkeyed tool twice. False refuses it (ErrNotDurable).
	AllowUnsyncedWrites bool
}

// Store is a journal.Store on a Redis or Valkey server. It is safe for
// concurrent use.
type Store struct {
	c         goredis.UniversalClient
	own       bool     // Close closes c
	prefix    string   // "{prefix}:", the meta hash's tag and layout 1's only one
	tags      []string // the hash tags records spread over, by their key's first byte
	idx       [][2]any // per tag its creation and expiry index keys, boxed once
	replicas  int
	waitMS    int64
	ns        uuid.UUID
	readOnly  bool
	testNow   func() time.Time
	closed    atomic.Bool
	clock     serverClock
	pending   pendingRecords
	prefixArg any // prefix as every script run sends it, boxed once
}

var _ journal.Store = (*Store)(nil)

// Open opens the journal at location
// (redis://[user:pass@]host:port/db[?prefix=P&replicas=N], rediss:// for
// TLS; a cluster's redis+cluster:// or rediss+cluster://host:port, more
// nodes as addr=host:port), creating it when the server holds none under
// the prefix (Options.Prefix, else the location's, else DefaultPrefix).
// Close closes the client.
func Open(ctx context.Context, location string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("journal/redis: %w", err)
	}
	q := u.Query()
	if p := q.Get("prefix"); p != "" && o.Prefix == "" {
		o.Prefix = p
	}
	if r := q.Get("replicas"); r != "" && o.Replicas == 0 {
		if o.Replicas, err = strconv.Atoi(r); err != nil || o.Replicas < 0 || o.Replicas > 16 {
			return nil, fmt.Errorf("journal/redis: replicas=%q: want a count from 0 to 16", r)
		}
	}
	q.Del("prefix")
	q.Del("replicas")
	u.RawQuery = q.Encode()
	var c goredis.UniversalClient
	if cluster, ok := strings.CutSuffix(u.Scheme, "+cluster"); ok {
		u.Scheme = cluster
		co, err := goredis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("journal/redis: %w", err)
		}
		c = goredis.NewClusterClient(co)
	} else {
		co, err := goredis.ParseURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("journal/redis: %w", err)
		}
		c = goredis.NewClient(co)
	}
	s, err := New(ctx, c, &o)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// New opens the journal on a client the caller owns and keeps: Close does
// not close it.
func New(ctx context.Context, c goredis.UniversalClient, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	jo := o.Journal
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return nil, fmt.Errorf("journal/redis: prefix %q: braces are not allowed (the store adds its own hash tag)", o.Prefix)
	}
	if o.Replicas < 0 {
		return nil, fmt.Errorf("journal/redis: Options.Replicas %d: want 0 or more", o.Replicas)
	}
	s := &Store{c: c, prefix: "{" + o.Prefix + "}:", readOnly: jo.ReadOnly, testNow: jo.Now,
		replicas: o.Replicas, waitMS: cmp.Or(o.ReplicaTimeout, time.Second).Milliseconds()}
	s.prefixArg = s.prefix
	if !o.AllowUnsyncedWrites && !jo.ReadOnly {
		if err := checkDurable(ctx, c, o.Replicas); err != nil {
			return nil, err
		}
	}
	if err := s.openMeta(ctx, jo.Namespace); err != nil {
		return nil, err
	}
	if s.testNow == nil {
		// A first reading of the server's clock, so that the first
		// transition can decide before it reads; without one it reads first.
		if t, err := c.Time(ctx).Result(); err == nil {
			s.clock.observe(t, time.Now())
		}
	}
	return s, nil
}

// checkDurable refuses a server or master that does not fsync every write,
// and a cluster whose masters have replicas not waited for (Replicas).
func checkDurable(ctx context.Context, c goredis.UniversalClient, replicas int) error {
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		if err := checkFsync(ctx, c, ""); err != nil {
			return err
		}
		if n, ok := c.(*goredis.Client); ok && replicas > 0 {
			return checkReplicas(ctx, n, replicas, false)
		}
		return nil
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		if err := checkFsync(ctx, n, n.Options().Addr+": "); err != nil {
			return err
		}
		return checkReplicas(ctx, n, replicas, true)
	})
}

// checkFsync refuses a server that does not fsync every write.
func checkFsync(ctx context.Context, n goredis.UniversalClient, node string) error {
	cfg, err := n.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("journal/redis: %sreading the server's durability settings (CONFIG GET append*): %w; "+
			"a server that hides them can be opened with Options.AllowUnsyncedWrites, which gives up the write-ahead guarantee", node, err)
	}
	if cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always" {
		return fmt.Errorf("%w: %sappendonly=%q, appendfsync=%q; want appendonly yes and appendfsync always",
			ErrNotDurable, node, cfg["appendonly"], cfg["appendfsync"])
	}
	return nil
}

// checkReplicas refuses a master with fewer replicas in sync than
// replicas, or one of them not fsyncing every write, and, when failover
// (a cluster's), one with replicas that are not waited for.
func checkReplicas(ctx context.Context, n *goredis.Client, replicas int, failover bool) error {
	info, err := n.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("journal/redis: %s: INFO replication: %w", n.Options().Addr, err)
	}
	have := 0
	for _, line := range strings.Split(info, "\n") { // slave0:ip=…,port=…,state=online,…
		f := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSpace(line), ",") {
			k, v, _ := strings.Cut(kv, "=")
			f[k[strings.IndexByte(k, ':')+1:]] = v
		}
		if !strings.HasPrefix(line, "slave") || f["state"] != "online" {
			continue
		}
		have++
		o := *n.Options()
		o.Addr = net.JoinHostPort(f["ip"], f["port"])
		r := goredis.NewClient(&o)
		err := checkFsync(ctx, r, "replica "+o.Addr+": ")
		_ = r.Close()
		if err != nil {
			return err
		}
	}
	switch {
	case have > 0 && replicas == 0 && failover:
		return fmt.Errorf("%w: master %s has %d replicas, which a failover promotes without waiting for the last writes; "+
			"want Options.Replicas (replicas=N) 1 or more", ErrNotDurable, n.Options().Addr, have)
	case replicas > have:
		return fmt.Errorf("%w: Options.Replicas %d, but master %s has %d replicas in sync", ErrNotDurable, replicas, n.Options().Addr, have)
	}
	return nil
}

// openMeta creates or reads the journal's meta hash: namespace and layout.
func (s *Store) openMeta(ctx context.Context, want uuid.UUID) error {
	meta := s.prefix + "meta"
	if !s.readOnly {
		ns := want
		if ns == uuid.Nil {
			ns = uuid.New()
		}
		// HSETNX twice in one MULTI would not tell us who won; a script
		// would, but the two fields are written once and only ever read.
		if _, err := s.c.HSetNX(ctx, meta, "namespace", ns.String()).Result(); err != nil {
			return s.wrap("open", err)
		}
		layout := 1
		if _, ok := s.c.(*goredis.ClusterClient); ok {
			layout = 2 // created on a cluster: spread over its masters
		}
		if _, err := s.c.HSetNX(ctx, meta, "layout", strconv.Itoa(layout)).Result(); err != nil {
			return s.wrap("open", err)
		}
	}
	vals, err := s.c.HMGet(ctx, meta, "namespace", "layout").Result()
	if err != nil {
		return s.wrap("open", err)
	}
	nsText, _ := vals[0].(string)
	layout, _ := vals[1].(string)
	if nsText == "" {
		return fmt.Errorf("%w: no journal under prefix %q on the server", journal.ErrNoJournal, strings.Trim(s.prefix, "{}:"))
	}
	n, err := strconv.Atoi(layout)
	if err != nil || n > layoutVersion {
		return fmt.Errorf("%w: key layout %q under prefix %q, this package writes %d", journal.ErrNewerVersion, layout, s.prefix, layoutVersion)
	}
	s.tags = []string{s.prefix}
	if n == 2 {
		s.tags = make([]string, spreadTags)
		for i := range s.tags {
			s.tags[i] = fmt.Sprintf("{%s:%02x}:", strings.Trim(s.prefix, "{}:"), i)
		}
	}
	for _, t := range s.tags {
		s.idx = append(s.idx, [2]any{t + "created", t + "expires"})
	}
	ns, err := uuid.Parse(nsText)
	if err != nil {
		return fmt.Errorf("%w: namespace %q under prefix %q", journal.ErrCorrupt, nsText, s.prefix)
	}
	if want != uuid.Nil && want != ns {
		return fmt.Errorf("%w: Options.Namespace %s, journal %s", journal.ErrNamespaceMismatch, want, ns)
	}
	s.ns = ns
	return nil
}

// BeginReplays reports that Begin answers a settled record by one
// read-only round trip, so a caller (the idempotency middleware) need not
// Get the record first.
func (s *Store) BeginReplays() bool { return true }

// Namespace returns the journal's UUIDv5 namespace.
func (s *Store) Namespace() uuid.UUID { return s.ns }

// Now returns the clock the store judges leases and expiry by: the
// server's (TIME), or Options.Journal.Now; this machine's when the server
// cannot be asked (only previews read it: every write decides on TIME).
func (s *Store) Now() time.Time {
	t, err := s.now(context.Background(), s.c)
	if err != nil {
		return time.Now()
	}
	return t
}

type cmdable interface {
	Time(ctx context.Context) *goredis.TimeCmd
	Get(ctx context.Context, key string) *goredis.StringCmd
}

// now reads the server's clock, unless a test clock stands in for it.
func (s *Store) now(ctx context.Context, c cmdable) (time.Time, error) {
	if s.testNow != nil {
		return s.testNow(), nil
	}
	return c.Time(ctx).Result()
}

// tag is the index into s.tags of the hash tag of k's record.
func (s *Store) tag(k uuid.UUID) int { return int(k[0]) % len(s.tags) }

// spread reports layout 2: a record, its indexes and its guard set may
// lie on different masters.
func (s *Store) spread() bool { return len(s.tags) > 1 }

// recordKey names the string holding the record for k: its tag, "r:"
// and k's canonical text, built in one allocation (every Get and every
// script names one).
func (s *Store) recordKey(k uuid.UUID) string {
	var text [36]byte
	hex.Encode(text[0:8], k[0:4])
	hex.Encode(text[9:13], k[4:6])
	hex.Encode(text[14:18], k[6:8])
	hex.Encode(text[19:23], k[8:10])
	hex.Encode(text[24:36], k[10:16])
	text[8], text[13], text[18], text[23] = '-', '-', '-', '-'
	return s.tags[s.tag(k)] + "r:" + string(text[:]) // one allocation: the conversion is not copied
}

// guardKey names the set of suppressed records' keys of one tenant,
// session and tool: the first half of the SHA-256 of each field's 8-byte
// big-endian length and bytes, in hex, under the tag its first byte picks.
func (s *Store) guardKey(tenant, session, tool string) string {
	var stack [256]byte
	buf := stack[:0]
	if n := 24 + len(tenant) + len(session) + len(tool); n > len(stack) {
		buf = make([]byte, 0, n)
	}
	for _, f := range [...]string{tenant, session, tool} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	sum := sha256.Sum256(buf)
	var text [32]byte
	hex.Encode(text[:], sum[:16])
	return s.tags[int(sum[0])%len(s.tags)] + "g:" + string(text[:]) // one allocation: the conversion is not copied
}

// get reads and verifies the record for key into *r; false when there is
// none. The caller's record is filled in place, so a Get allocates no
// record of its own.
func (s *Store) get(ctx context.Context, c cmdable, key uuid.UUID, r *journal.Record) (bool, error) {
	b, err := c.Get(ctx, s.recordKey(key)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap("get "+key.String(), err)
	}
	if *r, err = codec.Decode(b); err != nil {
		return false, fmt.Errorf("journal/redis: key %s: %w", key, err)
	}
	return true, nil
}

// markSuppressed adds r, on a spread journal and when suppressed, to its
// guard set before r is written: a set may name a record that is not (or
// no longer) suppressed, which the guard ignores, never miss one that is.
func (s *Store) markSuppressed(ctx context.Context, r *journal.Record) error {
	if !s.spread() || r.State != journal.StateSuppressed {
		return nil
	}
	return s.wrap("guard set of "+r.Key.String(), s.c.SAdd(ctx, s.guardKey(r.Intent.Tenant, r.Intent.Session, r.Intent.Tool), r.Key.String()).Err())
}

// readGuard reads a spread journal's guard set and its members' records.
func (s *Store) readGuard(ctx context.Context, guard string) ([]guardEntry, error) {
	ids, err := s.c.SMembers(ctx, guard).Result()
	if err != nil || len(ids) == 0 {
		return nil, s.wrap("guard set", err)
	}
	g := make([]guardEntry, len(ids))
	for i, id := range ids {
		g[i].id = id
		k, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("%w: guard set %s holds %q", journal.ErrCorrupt, guard, id)
		}
		r := new(journal.Record)
		if found, err := s.get(ctx, s.c, k, r); err != nil {
			return nil, err
		} else if found {
			g[i].rec = r
		}
	}
	return g, nil
}

// tx runs fn in an optimistic transaction watching keys, again while
// another writer changes them between the read and the write.
func (s *Store) tx(ctx context.Context, op string, fn func(*goredis.Tx) error, keys ...string) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	for range maxTxRetries {
		err := s.c.Watch(ctx, fn, keys...)
		if !errors.Is(err, goredis.TxFailedErr) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("journal/redis: %s: the watched keys changed %d times in a row; giving up", op, maxTxRetries)
}

// Begin decides what happens to an intent; see journal.Store. It first
// assumes no record and no suppression, at the estimated server clock (a
// new key is one script run); a refusal answers the records to decide on.
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := machine.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	if err := s.usable(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	guard := "" // the guard set, read with the records when the request consults it
	if req.Guard != journal.GuardOff {
		guard = s.guardKey(req.Intent.Tenant, req.Intent.Session, req.Intent.Tool)
	}
	v := view{checks: []check{{key: req.Key}}}
	if now, ok := s.estimate(); ok && !s.readOnly {
		v = view{now: now, checks: []check{{key: req.Key, known: true}}, guardKnown: true}
		if s.spread() && guard != "" { // the script cannot check a guard set in another slot
			g, err := s.readGuard(ctx, guard)
			if err != nil {
				return journal.BeginResult{}, err
			}
			v.guard = g
		}
	}
	for range maxTxRetries {
		res, writes, t := s.decideBegin(&req, &v)
		var err error
		switch {
		case !t.known || t.need != nil || (t.guard && !v.guardKnown):
			v, err = s.snapshot(ctx, append(v.keys(), t.need...), guard)
		case len(writes) == 0 && v.fresh:
			return res, nil
		case len(writes) == 0:
			v, err = s.snapshot(ctx, v.keys(), guard)
		case s.readOnly:
			return journal.BeginResult{}, fmt.Errorf("%w: begin %s", journal.ErrReadOnly, req.Key)
		default:
			g := ""
			if t.guard {
				g = guard
			}
			var done bool
			if done, v, err = s.commit(ctx, "begin "+req.Key.String(), v, g, writes); done {
				return res, nil
			}
		}
		if err != nil {
			return journal.BeginResult{}, err
		}
	}
	return journal.BeginResult{}, s.contended("begin " + req.Key.String())
}

// beginNeeds is what a Begin decision found missing from its view, and
// whether it consulted the guard.
type beginNeeds struct {
	known bool        // the request's own record was known: a decision was made
	need  []uuid.UUID // other records to read before deciding
	guard bool        // the decision consulted the guard set
}

// decideBegin decides req on v: DecideBegin, the guard and the suppression
// placement, as the state machine says, on the records v holds.
func (s *Store) decideBegin(req *journal.BeginRequest, v *view) (journal.BeginResult, []write, beginNeeds) {
	cur := v.find(req.Key)
	if !cur.known {
		return journal.BeginResult{}, nil, beginNeeds{}
	}
	d := machine.DecideBegin(cur.rec, req, v.now)
	t := beginNeeds{known: true}
	if d.Guard {
		t.guard = true
		if !v.guardKnown {
			return journal.BeginResult{}, nil, t
		}
		for _, g := range v.guard {
			if g.rec != nil && machine.GuardBlocks(g.rec, req, v.now) {
				return journal.BeginResult{Outcome: journal.Guarded, Record: *g.rec}, nil, t
			}
		}
	}
	var recs []*journal.Record
	if d.Suppress != nil {
		sc := v.find(d.Suppress.Key)
		if sc == nil || !sc.known {
			t.need = []uuid.UUID{d.Suppress.Key}
			return journal.BeginResult{}, nil, t
		}
		if sup := machine.PlaceSuppression(sc.rec, d.Suppress, v.now); sup != nil {
			recs = append(recs, sup)
		}
	}
	if d.Write != nil {
		recs = append(recs, d.Write)
	}
	return d.Result, encode(recs...), t
}

// StartAttempt records a new attempt; see journal.Store.
func (s *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	_, err := s.update(ctx, req.Key, "start attempt", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends the caller's lease; see journal.Store.
func (s *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := machine.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := s.update(ctx, req.Key, "renew", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome; see journal.Store.
func (s *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := machine.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	return s.update(ctx, c.Key, "complete", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyCompletion(cur, &c, now)
	})
}

// Resolve settles a pending or unknown record; see journal.Store.
func (s *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	return s.update(ctx, key, "resolve", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyResolution(cur, res, now)
	})
}

// update applies fn to the record for key and stores the result by one
// script run, on the record this store wrote last if remembered, else read.
func (s *Store) update(ctx context.Context, key uuid.UUID, op string, fn func(*journal.Record, time.Time) (journal.Record, error)) (journal.Record, error) {
	if s.readOnly {
		if s.closed.Load() {
			return journal.Record{}, journal.ErrClosed
		}
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrReadOnly, op, key)
	}
	if err := s.usable(ctx); err != nil {
		return journal.Record{}, err
	}
	name := op + " " + key.String()
	v := view{checks: []check{{key: key}}}
	if val, ok := s.pending.recall(key); ok {
		if now, ok := s.estimate(); ok {
			if r, err := codec.Decode(val); err == nil {
				v = view{now: now, checks: []check{{key: key, known: true, val: val, rec: &r}}}
				if s.testNow == nil && v.now.Before(r.Updated) {
					v.now = r.Updated // the record's own time, which the server has passed
				}
			}
		}
	}
	var err error
	for range maxTxRetries {
		cur := &v.checks[0]
		if !cur.known || (!v.fresh && cur.rec == nil) {
			if v, err = s.snapshot(ctx, []uuid.UUID{key}, ""); err != nil {
				return journal.Record{}, err
			}
			continue
		}
		if cur.rec == nil {
			return journal.Record{}, fmt.Errorf("%w: %s", journal.ErrNotFound, name)
		}
		r, ferr := fn(cur.rec, v.now)
		if ferr != nil {
			if v.fresh {
				return journal.Record{}, ferr
			}
			if v, err = s.snapshot(ctx, []uuid.UUID{key}, ""); err != nil {
				return journal.Record{}, err
			}
			continue
		}
		var done bool
		if done, v, err = s.commit(ctx, name, v, "", encode(&r)); done {
			return r, nil
		}
		if err != nil {
			return journal.Record{}, err
		}
	}
	return journal.Record{}, s.contended(name)
}

// view is what a transition knows of the records its decision depends on.
type view struct {
	now        time.Time // the decision's clock
	fresh      bool      // checks and guard were read by one script run at now: a decision that writes nothing may be answered from them
	checks     []check
	guardKnown bool // guard holds the guard set's members (none when assumed)
	guard      []guardEntry
}

// find returns v's check of key, or nil.
func (v *view) find(key uuid.UUID) *check {
	for i := range v.checks {
		if v.checks[i].key == key {
			return &v.checks[i]
		}
	}
	return nil
}

func (v *view) keys() []uuid.UUID {
	k := make([]uuid.UUID, len(v.checks))
	for i := range v.checks {
		k[i] = v.checks[i].key
	}
	return k
}

// estimate is the clock of a decision made before reading: the test
// clock, or the estimate of the server's.
func (s *Store) estimate() (time.Time, bool) {
	if s.testNow != nil {
		return s.testNow(), true
	}
	return s.clock.estimate()
}

// snapshot reads keys (and the guard set, when guard is not empty) and
// the server's clock in one script run; on a spread journal, one per key
// and the guard set after them, at the earliest clock they answered.
func (s *Store) snapshot(ctx context.Context, keys []uuid.UUID, guard string) (view, error) {
	if s.spread() && (len(keys) > 1 || guard != "") {
		var v view
		for _, k := range keys {
			kv, err := s.snapshot(ctx, []uuid.UUID{k}, "")
			if err != nil {
				return view{}, err
			}
			if v.checks = append(v.checks, kv.checks...); len(v.checks) == 1 || kv.now.Before(v.now) {
				v.now = kv.now
			}
		}
		var err error
		v.fresh, v.guardKnown = true, guard != ""
		if guard != "" {
			v.guard, err = s.readGuard(ctx, guard)
		}
		return v, err
	}
	checks := make([]check, len(keys)) // all unknown: the script answers what it finds
	for i, k := range keys {
		checks[i].key = k
	}
	res, err := s.cas(ctx, time.Time{}, checks, guard, nil, nil)
	if err != nil {
		return view{}, s.wrap("read "+keys[0].String(), err)
	}
	s.clock.observe(res.now, time.Now())
	return s.viewOf(checks, guard != "", res)
}

// viewOf is the view a script's refusal answered: the records as they
// are, at the server's clock.
func (s *Store) viewOf(checks []check, guard bool, res casResult) (view, error) {
	if len(res.vals) != len(checks) {
		return view{}, fmt.Errorf("journal/redis: script answered %d records for %d keys", len(res.vals), len(checks))
	}
	v := view{now: res.now, fresh: true, checks: make([]check, len(checks)), guardKnown: guard, guard: res.guard}
	if s.testNow != nil {
		v.now = s.testNow()
	}
	var err error
	for i, c := range checks {
		v.checks[i] = check{key: c.key, known: true, val: res.vals[i]}
		if v.checks[i].rec, err = decode(res.vals[i], c.key.String()); err != nil {
			return view{}, err
		}
	}
	for i := range v.guard {
		if v.guard[i].rec, err = decode(v.guard[i].val, v.guard[i].id+" (guard set)"); err != nil {
			return view{}, err
		}
	}
	return v, nil
}

// decode decodes the record named key from b; nil when b is nil (absent).
func decode(b []byte, key string) (*journal.Record, error) {
	if b == nil {
		return nil, nil
	}
	r, err := codec.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("journal/redis: key %s: %w", key, err)
	}
	return &r, nil
}

// commit runs the script for a decision on v: done when it wrote, else
// the view its refusal answered. On a spread journal it compares only the
// records in the slot it writes.
func (s *Store) commit(ctx context.Context, op string, v view, guard string, writes []write) (bool, view, error) {
	var want []guardEntry
	checks := v.checks
	if s.spread() {
		guard, checks = "", nil
		for _, c := range v.checks {
			if s.tag(c.key) == s.tag(writes[0].rec.Key) {
				checks = append(checks, c)
			}
		}
	} else if guard != "" {
		want = v.guard
	}
	for _, w := range writes {
		if err := s.markSuppressed(ctx, w.rec); err != nil {
			return false, v, err
		}
	}
	res, err := s.cas(ctx, v.now, checks, guard, want, writes)
	if err != nil {
		for _, w := range writes {
			s.pending.forget(w.rec.Key)
		}
		return false, v, s.wrapWrite(op, err)
	}
	s.clock.observe(res.now, time.Now())
	if res.wrote {
		for _, w := range writes {
			if w.rec.State == journal.StatePending {
				s.pending.remember(w.rec.Key, w.val)
			} else {
				s.pending.forget(w.rec.Key)
			}
		}
		return true, v, nil
	}
	nv, err := s.viewOf(checks, guard != "", res)
	if s.spread() {
		for _, c := range v.checks {
			if nv.find(c.key) == nil {
				nv.checks = append(nv.checks, c)
			}
		}
		nv.guard, nv.guardKnown = v.guard, v.guardKnown
	}
	return false, nv, err
}

// usable refuses a closed store or a done context.
func (s *Store) usable(ctx context.Context) error {
	if s.closed.Load() {
		return journal.ErrClosed
	}
	return ctx.Err()
}

// contended is the error of a transition whose records kept changing.
func (s *Store) contended(op string) error {
	return fmt.Errorf("journal/redis: %s: the records changed %d times in a row; giving up", op, maxTxRetries)
}

// Get returns the record for key.
func (s *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if s.closed.Load() {
		return journal.Record{}, journal.ErrClosed
	}
	var r journal.Record
	found, err := s.get(ctx, s.c, key, &r)
	if err != nil {
		return journal.Record{}, err
	}
	if !found {
		return journal.Record{}, fmt.Errorf("%w: %s", journal.ErrNotFound, key)
	}
	return r, nil
}

// listPage is how many keys List and Stats read per round trip.
const listPage = 256

// List yields the records matching f, newest first, merging each tag's
// creation index read in pages; see journal.Store. A record written while
// the loop runs may or may not be seen.
func (s *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		if s.closed.Load() {
			yield(journal.Record{}, journal.ErrClosed)
			return
		}
		by := goredis.ZRangeBy{Max: "+inf", Min: "-inf", Count: max(listPage/int64(len(s.tags)), 16)}
		if !f.Until.IsZero() {
			by.Max = "(" + strconv.FormatInt(f.Until.UnixMicro(), 10)
		}
		if !f.Since.IsZero() {
			by.Min = strconv.FormatInt(f.Since.UnixMicro(), 10)
		}
		type head struct {
			zs   []goredis.Z
			recs []*journal.Record
			off  int64
			done bool
		}
		heads := make([]head, len(s.tags))
		for n := 0; ; {
			best := -1
			for t := range heads {
				h := &heads[t]
				if len(h.zs) == 0 && !h.done {
					page := by
					page.Offset = h.off
					zs, err := s.c.ZRevRangeByScoreWithScores(ctx, s.idx[t][0].(string), &page).Result()
					if err != nil {
						yield(journal.Record{}, s.wrap("list", err))
						return
					}
					if h.recs, err = s.mget(ctx, t, zs); err != nil {
						yield(journal.Record{}, err)
						return
					}
					h.zs, h.off, h.done = zs, h.off+int64(len(zs)), int64(len(zs)) < by.Count
				}
				if len(h.zs) > 0 && (best < 0 || newer(h.zs[0], heads[best].zs[0])) {
					best = t
				}
			}
			if best < 0 {
				return
			}
			h := &heads[best]
			r := h.recs[0]
			h.zs, h.recs = h.zs[1:], h.recs[1:]
			if r == nil || !machine.MatchFilter(r, &f) {
				continue
			}
			if !yield(*r, nil) {
				return
			}
			if n++; f.Limit > 0 && n >= f.Limit {
				return
			}
		}
	}
}

// newer orders a before b as ZREVRANGEBYSCORE does: by score, then by
// member, both descending.
func newer(a, b goredis.Z) bool {
	return a.Score > b.Score || a.Score == b.Score && a.Member.(string) > b.Member.(string)
}

// mget reads the records of tag t's members zs in one round trip; a record
// deleted meanwhile is nil.
func (s *Store) mget(ctx context.Context, t int, zs []goredis.Z) ([]*journal.Record, error) {
	if len(zs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(zs))
	for i, z := range zs {
		keys[i] = s.tags[t] + "r:" + z.Member.(string)
	}
	vals, err := s.c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, s.wrap("list", err)
	}
	out := make([]*journal.Record, len(vals))
	for i, v := range vals {
		if out[i], err = decode(bulk(v), zs[i].Member.(string)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GC removes expired records; see journal.Store. It reads only the
// records each tag's expiry index says are past their TTL.
func (s *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if s.closed.Load() {
		return journal.GCResult{}, journal.ErrClosed
	}
	if s.readOnly && !opts.DryRun {
		return journal.GCResult{}, fmt.Errorf("%w: gc", journal.ErrReadOnly)
	}
	now, err := s.now(ctx, s.c)
	if err != nil {
		return journal.GCResult{}, s.wrap("gc", err)
	}
	var res journal.GCResult
	for t := range s.tags {
		ids, err := s.c.ZRangeByScore(ctx, s.idx[t][1].(string), &goredis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMicro(), 10)}).Result()
		if err != nil {
			return res, s.wrap("gc", err)
		}
		for _, id := range ids {
			if err := s.gcOne(ctx, t, id, now, opts.DryRun, &res); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// gcOne removes the record id of tag t if it expired, counting it in res.
func (s *Store) gcOne(ctx context.Context, t int, id string, now time.Time, dryRun bool, res *journal.GCResult) error {
	k, err := uuid.Parse(id)
	if err != nil {
		return fmt.Errorf("%w: expiry index holds %q", journal.ErrCorrupt, id)
	}
	var guard string
	err = s.tx(ctx, "gc "+id, func(tx *goredis.Tx) error {
		r := new(journal.Record)
		found, err := s.get(ctx, tx, k, r)
		if err != nil || !found {
			return err
		}
		switch {
		case journal.Expired(r, now):
			if dryRun {
				res.Removed++
				return nil
			}
			guard = s.guardKey(r.Intent.Tenant, r.Intent.Session, r.Intent.Tool)
			_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Del(ctx, s.recordKey(k))
				p.ZRem(ctx, s.idx[t][0].(string), id)
				p.ZRem(ctx, s.idx[t][1].(string), id)
				if !s.spread() {
					p.SRem(ctx, guard, id)
				}
				return nil
			})
			if err != nil {
				return s.wrapWrite("gc "+id, err)
			}
			res.Removed++
		case machine.Overdue(r, now):
			res.KeptUnknown++
		}
		return nil
	}, s.recordKey(k))
	if err == nil && s.spread() && guard != "" {
		err = s.wrap("gc "+id, s.c.SRem(ctx, guard, id).Err()) // after: a member without a record is ignored
	}
	return err
}

// Stats counts the journal's records by reading each of them (the store
// keeps no counts). SizeBytes is the total size of the encoded records.
func (s *Store) Stats(ctx context.Context) (journal.Stats, error) {
	if s.closed.Load() {
		return journal.Stats{}, journal.ErrClosed
	}
	now, err := s.now(ctx, s.c)
	if err != nil {
		return journal.Stats{}, s.wrap("stats", err)
	}
	st := machine.NewStats()
	for t := range s.tags {
		for offset := int64(0); ; offset += listPage {
			zs, err := s.c.ZRangeWithScores(ctx, s.idx[t][0].(string), offset, offset+listPage-1).Result()
			if err != nil {
				return st, s.wrap("stats", err)
			}
			recs, err := s.mget(ctx, t, zs)
			if err != nil {
				return st, err
			}
			for _, r := range recs {
				if r != nil {
					machine.AddStats(&st, r, now)
					st.SizeBytes += int64(len(codec.Encode(nil, r)))
				}
			}
			if len(zs) < listPage {
				break
			}
		}
	}
	return st, nil
}

// Import writes r as it is; see journal.Store.
func (s *Store) Import(ctx context.Context, r journal.Record) error {
	if err := machine.ValidateImport(&r); err != nil {
		return err
	}
	if err := s.usable(ctx); err != nil {
		return err
	}
	name, w := "import "+r.Key.String(), encode(&r)
	for range maxTxRetries {
		cur := new(journal.Record)
		found, err := s.get(ctx, s.c, r.Key, cur)
		switch {
		case err != nil:
			return err
		case found && string(codec.Encode(nil, cur)) == string(w[0].val):
			return nil
		case found:
			return fmt.Errorf("%w: %s", journal.ErrExists, r.Key)
		case s.readOnly:
			return fmt.Errorf("%w: %s", journal.ErrReadOnly, name)
		}
		now, _ := s.estimate() // none yet: the script refuses, and answers the server's
		done, _, err := s.commit(ctx, name, view{now: now, checks: []check{{key: r.Key, known: true}}}, "", w)
		if done || err != nil {
			return err
		}
	}
	return s.contended(name)
}

// Close releases the store, and the client when Open made it.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return journal.ErrClosed
	}
	if s.own {
		return s.c.Close()
	}
	return nil
}

// wrap names the operation in an error from the server or the network.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("journal/redis: %s: %w", op, err)
}

// wrapWrite is wrap for the EXEC of a write: a connection lost after it
// was sent leaves the write's outcome unknown, and says so.
func (s *Store) wrapWrite(op string, err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("journal/redis: %s: %w: %w", op, journal.ErrOutcomeUncertain, err)
	}
	return s.wrap(op, err)
}
