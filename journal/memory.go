package journal

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// MemoryStore is a Store that keeps everything in maps: for tests and for
// ephemeral agents whose journal may die with the process. It has the same
// semantics as the bbolt store except durability. It is safe for concurrent
// use.
//
// Records are kept encoded, as the bbolt store keeps them, so callers never
// share memory with the store and the encoding is exercised by every test.
type MemoryStore struct {
	ns       uuid.UUID
	now      func() time.Time
	readOnly bool

	mu      sync.RWMutex
	closed  bool                 // guarded by mu
	records map[uuid.UUID][]byte // guarded by mu
}

var _ Store = (*MemoryStore)(nil)

// NewMemory returns an empty in-memory store. Its namespace is
// opts.Namespace, or random when that is zero.
func NewMemory(opts *Options) *MemoryStore {
	var o Options
	if opts != nil {
		o = *opts
	}
	m := &MemoryStore{ns: o.Namespace, now: o.Now, readOnly: o.ReadOnly, records: map[uuid.UUID][]byte{}}
	if m.ns == uuid.Nil {
		m.ns = uuid.New()
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Namespace returns the store's namespace.
// Now returns the store's clock (Options.Now), by which it judges leases
// and expiry.
func (m *MemoryStore) Now() time.Time { return m.now() }

// Namespace returns the store's UUIDv5 namespace.
func (m *MemoryStore) Namespace() uuid.UUID { return m.ns }

// get returns the record for key; m.mu is held.
func (m *MemoryStore) get(key uuid.UUID) (*Record, error) {
	b, ok := m.records[key]
	if !ok {
		return nil, nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	return &r, nil
}

func (m *MemoryStore) put(r *Record) {
	r.Version = SchemaVersion
	m.records[r.Key] = encodeRecord(nil, r)
}

// lockWrite takes the write lock for a mutating call.
func (m *MemoryStore) lockWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

func (m *MemoryStore) lockRead(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Begin decides what happens to an intent; see Store.
func (m *MemoryStore) Begin(ctx context.Context, req BeginRequest) (BeginResult, error) {
	if err := validateBegin(&req); err != nil {
		return BeginResult{}, err
	}
	if err := m.lockWrite(ctx); err != nil {
		return BeginResult{}, err
	}
	defer m.mu.Unlock()
	cur, err := m.get(req.Key)
	if err != nil {
		return BeginResult{}, err
	}
	now := m.now()
	d := decideBegin(cur, &req, now)
	if d.Guard {
		for _, b := range m.records {
			s, err := decodeRecord(b)
			if err == nil && guardBlocks(&s, &req, now) {
				return BeginResult{Outcome: Guarded, Record: s}, nil
			}
		}
	}
	if m.readOnly {
		if d.Write != nil {
			return BeginResult{}, fmt.Errorf("%w: begin %s", ErrReadOnly, req.Key)
		}
		return d.Result, nil // a Mismatch, whose suppression cannot be recorded
	}
	if d.Suppress != nil {
		sc, err := m.get(d.Suppress.Key)
		if err != nil {
			return BeginResult{}, err
		}
		if w := placeSuppression(sc, d.Suppress, now); w != nil {
			m.put(w)
		}
	}
	if d.Write != nil {
		m.put(d.Write)
	}
	return d.Result, nil
}

// StartAttempt records a new attempt; see Store.
func (m *MemoryStore) StartAttempt(ctx context.Context, req AttemptRequest) error {
	_, err := m.update(ctx, req.Key, "start attempt", func(cur *Record, now time.Time) (Record, error) {
		return applyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends the caller's lease; see Store.
func (m *MemoryStore) Renew(ctx context.Context, req RenewRequest) (time.Time, error) {
	if err := validateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := m.update(ctx, req.Key, "renew", func(cur *Record, now time.Time) (Record, error) {
		return applyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome; see Store.
func (m *MemoryStore) Complete(ctx context.Context, c Completion) (Record, error) {
	if err := validateCompletion(&c); err != nil {
		return Record{}, err
	}
	return m.update(ctx, c.Key, "complete", func(cur *Record, now time.Time) (Record, error) {
		return applyCompletion(cur, &c, now)
	})
}

// Resolve settles a pending or unknown record; see Store.
func (m *MemoryStore) Resolve(ctx context.Context, key uuid.UUID, res Resolution) (Record, error) {
	return m.update(ctx, key, "resolve", func(cur *Record, now time.Time) (Record, error) {
		return applyResolution(cur, res, now)
	})
}

// update applies fn to the record for key and stores the result.
func (m *MemoryStore) update(ctx context.Context, key uuid.UUID, op string, fn func(*Record, time.Time) (Record, error)) (Record, error) {
	if err := m.lockWrite(ctx); err != nil {
		return Record{}, err
	}
	defer m.mu.Unlock()
	if m.readOnly {
		return Record{}, fmt.Errorf("%w: %s %s", ErrReadOnly, op, key)
	}
	cur, err := m.get(key)
	if err != nil {
		return Record{}, err
	}
	if cur == nil {
		return Record{}, fmt.Errorf("%w: %s %s", ErrNotFound, op, key)
	}
	r, err := fn(cur, m.now())
	if err != nil {
		return Record{}, err
	}
	m.put(&r)
	return r, nil
}

// Get returns the record for key.
func (m *MemoryStore) Get(ctx context.Context, key uuid.UUID) (Record, error) {
	if err := m.lockRead(ctx); err != nil {
		return Record{}, err
	}
	defer m.mu.RUnlock()
	r, err := m.get(key)
	if err != nil {
		return Record{}, err
	}
	if r == nil {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return *r, nil
}

// List yields the records matching f, newest first. It scans every record:
// the memory store is meant for small journals.
func (m *MemoryStore) List(ctx context.Context, f Filter) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := m.lockRead(ctx); err != nil {
			yield(Record{}, err)
			return
		}
		var out []*Record
		for key, b := range m.records {
			r, err := decodeRecord(b)
			if err != nil {
				m.mu.RUnlock()
				yield(Record{}, fmt.Errorf("key %s: %w", key, err))
				return
			}
			if matchFilter(&r, &f) {
				out = append(out, &r)
			}
		}
		m.mu.RUnlock()
		slices.SortFunc(out, newerFirst)
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		for _, r := range out {
			if err := ctx.Err(); err != nil {
				yield(Record{}, err)
				return
			}
			if !yield(*r, nil) {
				return
			}
		}
	}
}

// GC removes expired records; see Store.
func (m *MemoryStore) GC(ctx context.Context, opts GCOptions) (GCResult, error) {
	if err := m.lockWrite(ctx); err != nil {
		return GCResult{}, err
	}
	defer m.mu.Unlock()
	if m.readOnly && !opts.DryRun {
		return GCResult{}, fmt.Errorf("%w: gc", ErrReadOnly)
	}
	now := m.now()
	var res GCResult
	for key, b := range m.records {
		r, err := decodeRecord(b)
		if err != nil {
			return res, fmt.Errorf("key %s: %w", key, err)
		}
		switch {
		case Expired(&r, now):
			res.Removed++
			if !opts.DryRun {
				delete(m.records, key)
			}
		case Overdue(&r, now):
			res.KeptUnknown++
		}
	}
	return res, nil
}

// Stats counts the store's records. SizeBytes is the total size of the
// encoded records.
func (m *MemoryStore) Stats(ctx context.Context) (Stats, error) {
	if err := m.lockRead(ctx); err != nil {
		return Stats{}, err
	}
	defer m.mu.RUnlock()
	s := newStats()
	now := m.now()
	for key, b := range m.records {
		r, err := decodeRecord(b)
		if err != nil {
			return Stats{}, fmt.Errorf("key %s: %w", key, err)
		}
		addStats(&s, &r, now)
		s.SizeBytes += int64(len(b))
	}
	return s, nil
}

// Import writes r as it is; see Store.
func (m *MemoryStore) Import(ctx context.Context, r Record) error {
	if err := validateImport(&r); err != nil {
		return err
	}
	if err := m.lockWrite(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	cur, err := m.get(r.Key)
	if err != nil {
		return err
	}
	if cur != nil {
		r.Version = SchemaVersion
		if equalRecords(cur, &r) {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrExists, r.Key)
	}
	if m.readOnly {
		return fmt.Errorf("%w: import %s", ErrReadOnly, r.Key)
	}
	m.put(&r)
	return nil
}

// Close releases the store; its records are dropped.
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.records = nil
	return nil
}
