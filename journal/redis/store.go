package redis

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	neturl "net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/journal"
)

func init() {
	open := func(ctx context.Context, location string, opts *journal.Options) (journal.Store, error) {
		return Open(ctx, location, &Options{Journal: opts})
	}
	journal.Register("redis", open)
	journal.Register("rediss", open)
}

// DefaultPrefix prefixes every key of a journal when Options.Prefix is
// empty.
const DefaultPrefix = "agentonce:"

// Options configures Open. A nil *Options means defaults.
type Options struct {
	// Journal holds the store-independent options: the namespace, the
	// clock (Now) and read-only mode. Nil means defaults.
	Journal *journal.Options
	// Prefix starts every key of the journal; journals under different
	// prefixes are independent. Empty means DefaultPrefix.
	Prefix string
	// AssumeDurable skips the durability check for a server that forbids
	// CONFIG GET: set it only when the server is known to run with
	// appendonly yes and appendfsync always.
	AssumeDurable bool
}

// Store is a journal.Store on Redis. It is safe for concurrent use.
type Store struct {
	c        *goredis.Client
	prefix   string
	ns       uuid.UUID
	now      func() time.Time
	readOnly bool
	closed   atomic.Bool
}

var _ journal.Store = (*Store)(nil)

// ErrNotDurable is returned by Open for a server whose configuration does
// not make every write durable before it is acknowledged.
var ErrNotDurable = errors.New("redis journal: the server does not fsync every write (need appendonly yes, appendfsync always)")

// Open connects to the server at rawURL (redis://host:port/db, with an
// optional prefix=… parameter) and opens the journal under that prefix or
// opts.Prefix, creating its namespace if it has none.
func Open(ctx context.Context, rawURL string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var jo journal.Options
	if o.Journal != nil {
		jo = *o.Journal
	}
	// A "prefix" parameter in the URL (not one of go-redis's) names the
	// prefix, so that one journal location string says everything.
	if u, err := neturl.Parse(rawURL); err == nil {
		q := u.Query()
		if p := q.Get("prefix"); p != "" {
			if o.Prefix != "" && o.Prefix != p {
				return nil, fmt.Errorf("%w: redis journal: the URL names prefix %q and Options.Prefix %q", journal.ErrInvalid, p, o.Prefix)
			}
			o.Prefix = p
			q.Del("prefix")
			u.RawQuery = q.Encode()
			rawURL = u.String()
		}
	}
	ro, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis journal: %w", err)
	}
	s := &Store{c: goredis.NewClient(ro), prefix: o.Prefix, now: jo.Now, readOnly: jo.ReadOnly}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.checkDurable(ctx, o.AssumeDurable); err != nil {
		s.c.Close()
		return nil, err
	}
	if err := s.namespace(ctx, jo.Namespace); err != nil {
		s.c.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) checkDurable(ctx context.Context, assume bool) error {
	if assume {
		return nil
	}
	cfg, err := s.c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("redis journal %s: checking durability with CONFIG GET: %w (set Options.AssumeDurable if the server forbids it and is known durable)", s.c.Options().Addr, err)
	}
	return durable(s.c.Options().Addr, cfg)
}

// durable judges a server's CONFIG GET append* answer.
func durable(addr string, cfg map[string]string) error {
	if cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always" {
		return fmt.Errorf("%w: %s has appendonly %q, appendfsync %q", ErrNotDurable, addr, cfg["appendonly"], cfg["appendfsync"])
	}
	return nil
}

func (s *Store) namespace(ctx context.Context, want uuid.UUID) error {
	key := s.prefix + "ns"
	ns := want
	if ns == uuid.Nil {
		ns = uuid.New()
	}
	if !s.readOnly {
		if err := s.c.SetNX(ctx, key, ns.String(), 0).Err(); err != nil {
			return s.fail("open", uuid.Nil, err)
		}
	}
	v, err := s.c.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		return fmt.Errorf("%w: redis journal under %q has no namespace (read-only open of an empty journal)", journal.ErrNotFound, s.prefix)
	}
	if err != nil {
		return s.fail("open", uuid.Nil, err)
	}
	got, err := uuid.Parse(v)
	if err != nil {
		return fmt.Errorf("%w: redis journal %q: namespace %q: %v", journal.ErrCorrupt, s.prefix, v, err)
	}
	if want != uuid.Nil && got != want {
		return fmt.Errorf("%w: redis journal %q has namespace %s, not %s", journal.ErrInvalid, s.prefix, got, want)
	}
	s.ns = got
	return nil
}

// Namespace returns the journal's namespace.
func (s *Store) Namespace() uuid.UUID { return s.ns }

// Now returns the store's clock, by which it judges leases and expiry.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) recKey(k uuid.UUID) string { return s.prefix + "r:" + k.String() }

// guardKey names the set of suppressed records of one (tenant, session,
// tool): what GuardBlocks looks among.
func (s *Store) guardKey(r *journal.Record) string {
	h := sha1.New()
	for _, f := range []string{r.Intent.Tenant, r.Intent.Session, r.Intent.Tool} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return s.prefix + "g:" + hex.EncodeToString(h.Sum(nil))
}

func (s *Store) fail(op string, key uuid.UUID, err error) error {
	if key == uuid.Nil {
		return fmt.Errorf("redis journal %s: %s: %w", s.c.Options().Addr, op, err)
	}
	return fmt.Errorf("redis journal %s: %s %s: %w", s.c.Options().Addr, op, key, err)
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return journal.ErrClosed
	}
	return ctx.Err()
}

// read returns the record under key through c (a Tx or the client), nil
// when there is none.
func (s *Store) read(ctx context.Context, c goredis.Cmdable, key uuid.UUID) (*journal.Record, error) {
	k := s.recKey(key)
	v, err := c.Get(ctx, k).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("read", key, err)
	}
	r, err := decode(k, v)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// put queues r's write, and its place in the guard index when suppressed.
func (s *Store) put(ctx context.Context, p goredis.Pipeliner, r *journal.Record) {
	p.Set(ctx, s.recKey(r.Key), encode(r), 0)
	if r.State == journal.StateSuppressed {
		p.SAdd(ctx, s.guardKey(r), r.Key.String())
	}
}

// atomically runs fn under WATCH of keys until its transaction commits
// without a concurrent change, a bounded number of times.
func (s *Store) atomically(ctx context.Context, op string, key uuid.UUID, fn func(tx *goredis.Tx) error, keys ...string) error {
	for range 1000 {
		err := s.c.Watch(ctx, fn, keys...)
		if !errors.Is(err, goredis.TxFailedErr) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return s.fail(op, key, errors.New("gave up after 1000 conflicting transactions"))
}

// Begin decides what happens to an intent; see journal.Store.
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := s.check(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	if err := journal.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	probe := journal.Record{Intent: req.Intent}
	gkey := s.guardKey(&probe)
	mkey := journal.MismatchKey(req.Key, req.Fingerprint)
	var res journal.BeginResult
	err := s.atomically(ctx, "begin", req.Key, func(tx *goredis.Tx) error {
		cur, err := s.read(ctx, tx, req.Key)
		if err != nil {
			return err
		}
		now := s.now()
		d := journal.DecideBegin(cur, &req, now)
		if d.Guard {
			members, err := tx.SMembers(ctx, gkey).Result()
			if err != nil {
				return s.fail("begin", req.Key, err)
			}
			for _, m := range members {
				k, err := uuid.Parse(m)
				if err != nil {
					continue
				}
				g, err := s.read(ctx, tx, k)
				if err != nil {
					return err
				}
				if g != nil && journal.GuardBlocks(g, &req, now) {
					res = journal.BeginResult{Outcome: journal.Guarded, Record: *g}
					return nil
				}
			}
		}
		var sup *journal.Record
		if d.Suppress != nil {
			sc, err := s.read(ctx, tx, d.Suppress.Key)
			if err != nil {
				return err
			}
			sup = journal.PlaceSuppression(sc, d.Suppress, now)
		}
		if s.readOnly {
			if d.Write != nil {
				return fmt.Errorf("%w: begin %s", journal.ErrReadOnly, req.Key)
			}
			res = d.Result
			return nil
		}
		if d.Write != nil || sup != nil {
			if _, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				if sup != nil {
					s.put(ctx, p, sup)
				}
				if d.Write != nil {
					s.put(ctx, p, d.Write)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		res = d.Result
		return nil
	}, s.recKey(req.Key), s.recKey(mkey), gkey)
	if err != nil {
		return journal.BeginResult{}, s.wrap("begin", req.Key, err)
	}
	return res, nil
}

// wrap names the key in an error that does not already carry a journal
// sentinel or a context error.
func (s *Store) wrap(op string, key uuid.UUID, err error) error {
	for _, e := range []error{journal.ErrFenced, journal.ErrNotFound, journal.ErrInvalid, journal.ErrReadOnly,
		journal.ErrCorrupt, journal.ErrNotResolvable, journal.ErrExists, journal.ErrNewerVersion, journal.ErrClosed,
		context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return err
		}
	}
	return s.fail(op, key, err)
}

// update applies fn to the record under key atomically.
func (s *Store) update(ctx context.Context, key uuid.UUID, op string, fn func(*journal.Record, time.Time) (journal.Record, error)) (journal.Record, error) {
	if err := s.check(ctx); err != nil {
		return journal.Record{}, err
	}
	if s.readOnly {
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrReadOnly, op, key)
	}
	var out journal.Record
	err := s.atomically(ctx, op, key, func(tx *goredis.Tx) error {
		cur, err := s.read(ctx, tx, key)
		if err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("%w: %s %s", journal.ErrNotFound, op, key)
		}
		r, err := fn(cur, s.now())
		if err != nil {
			return err
		}
		if _, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { s.put(ctx, p, &r); return nil }); err != nil {
			return err
		}
		out = r
		return nil
	}, s.recKey(key))
	if err != nil {
		return journal.Record{}, s.wrap(op, key, err)
	}
	return out, nil
}

// StartAttempt records a new attempt; see journal.Store.
func (s *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	_, err := s.update(ctx, req.Key, "start attempt", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return journal.ApplyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends a lease; see journal.Store.
func (s *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := journal.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := s.update(ctx, req.Key, "renew", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return journal.ApplyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome; see journal.Store.
func (s *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := journal.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	return s.update(ctx, c.Key, "complete", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return journal.ApplyCompletion(cur, &c, now)
	})
}

// Resolve settles an unknown or pending record; see journal.Store.
func (s *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	if err := journal.ValidateResolution(key, &res); err != nil {
		return journal.Record{}, err
	}
	return s.update(ctx, key, "resolve", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return journal.ApplyResolution(cur, res, now)
	})
}

// Get returns the record for key.
func (s *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if err := s.check(ctx); err != nil {
		return journal.Record{}, err
	}
	r, err := s.read(ctx, s.c, key)
	if err != nil {
		return journal.Record{}, err
	}
	if r == nil {
		return journal.Record{}, fmt.Errorf("%w: %s", journal.ErrNotFound, key)
	}
	return *r, nil
}

// scan yields every record of the journal.
func (s *Store) scan(ctx context.Context) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		it := s.c.Scan(ctx, 0, s.prefix+"r:*", 512).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			v, err := s.c.Get(ctx, k).Bytes()
			if errors.Is(err, goredis.Nil) {
				continue // removed since the scan saw it
			}
			if err != nil {
				yield(journal.Record{}, s.fail("scan", uuid.Nil, err))
				return
			}
			r, err := decode(k, v)
			if !yield(r, err) || err != nil {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(journal.Record{}, s.fail("scan", uuid.Nil, err))
		}
	}
}

// List yields the records matching f, newest first, after scanning them
// all.
func (s *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(journal.Record{}, err)
			return
		}
		var out []journal.Record
		for r, err := range s.scan(ctx) {
			if err != nil {
				yield(journal.Record{}, err)
				return
			}
			if match(&r, &f) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b journal.Record) int {
			if c := b.Created.Compare(a.Created); c != 0 {
				return c
			}
			return bytes.Compare(b.Key[:], a.Key[:])
		})
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		for _, r := range out {
			if err := ctx.Err(); err != nil {
				yield(journal.Record{}, err)
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func match(r *journal.Record, f *journal.Filter) bool {
	in := &r.Intent
	switch {
	case f.Tenant != "" && in.Tenant != f.Tenant,
		f.Session != "" && in.Session != f.Session,
		f.Turn != "" && in.Turn != f.Turn,
		f.Tool != "" && in.Tool != f.Tool,
		f.State != 0 && r.State != f.State,
		!f.Since.IsZero() && r.Created.Before(f.Since),
		!f.Until.IsZero() && !r.Created.Before(f.Until):
		return false
	}
	return true
}

// GC removes expired records; see journal.Store. Each removal is
// conditional on the record not having changed since it was read.
func (s *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if err := s.check(ctx); err != nil {
		return journal.GCResult{}, err
	}
	if s.readOnly && !opts.DryRun {
		return journal.GCResult{}, fmt.Errorf("%w: gc", journal.ErrReadOnly)
	}
	var res journal.GCResult
	var expired []journal.Record
	for r, err := range s.scan(ctx) {
		if err != nil {
			return res, err
		}
		now := s.now()
		switch {
		case journal.Expired(&r, now):
			expired = append(expired, r)
		case journal.Overdue(&r, now):
			res.KeptUnknown++
		}
	}
	if opts.DryRun {
		res.Removed = len(expired)
		return res, nil
	}
	for _, r := range expired {
		removed := false
		err := s.atomically(ctx, "gc", r.Key, func(tx *goredis.Tx) error {
			cur, err := s.read(ctx, tx, r.Key)
			if err != nil || cur == nil || !journal.Expired(cur, s.now()) {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Del(ctx, s.recKey(r.Key))
				p.SRem(ctx, s.guardKey(cur), r.Key.String())
				return nil
			})
			removed = err == nil
			return err
		}, s.recKey(r.Key))
		if err != nil {
			return res, s.wrap("gc", r.Key, err)
		}
		if removed {
			res.Removed++
		}
	}
	return res, nil
}

// Stats counts the journal's records. SizeBytes is the size of their
// stored values.
func (s *Store) Stats(ctx context.Context) (journal.Stats, error) {
	if err := s.check(ctx); err != nil {
		return journal.Stats{}, err
	}
	st := journal.Stats{ByState: map[journal.State]int{}, ByTool: map[string]int{}}
	now := s.now()
	for r, err := range s.scan(ctx) {
		if err != nil {
			return journal.Stats{}, err
		}
		st.Records++
		st.ByState[r.State]++
		st.ByTool[r.Intent.Tool]++
		st.Attempts += len(r.Attempts)
		if journal.Expired(&r, now) {
			st.Expired++
		}
		if journal.Overdue(&r, now) {
			st.OverdueUnknown++
		}
		if st.Oldest.IsZero() || r.Created.Before(st.Oldest) {
			st.Oldest = r.Created
		}
		if r.Created.After(st.Newest) {
			st.Newest = r.Created
		}
		st.SizeBytes += int64(len(encode(&r)))
	}
	return st, nil
}

// Import writes r as it is; see journal.Store.
func (s *Store) Import(ctx context.Context, r journal.Record) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := journal.ValidateImport(&r); err != nil {
		return err
	}
	err := s.atomically(ctx, "import", r.Key, func(tx *goredis.Tx) error {
		cur, err := s.read(ctx, tx, r.Key)
		if err != nil {
			return err
		}
		if cur != nil {
			if bytes.Equal(encode(cur), encode(&r)) {
				return nil
			}
			return fmt.Errorf("%w: %s", journal.ErrExists, r.Key)
		}
		if s.readOnly {
			return fmt.Errorf("%w: import %s", journal.ErrReadOnly, r.Key)
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { s.put(ctx, p, &r); return nil })
		return err
	}, s.recKey(r.Key))
	if err != nil {
		return s.wrap("import", r.Key, err)
	}
	return nil
}

// Close releases the connection pool. Calls after Close return
// journal.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return journal.ErrClosed
	}
	return s.c.Close()
}
