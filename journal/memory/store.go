package memory

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Store is a journal.Store in a map, safe for concurrent use.
type Store struct {
	ns       uuid.UUID
	now      func() time.Time
	readOnly bool

	mu      sync.RWMutex
	closed  bool                 // guarded by mu
	records map[uuid.UUID][]byte // guarded by mu
}

var _ journal.Store = (*Store)(nil)

// New returns an empty in-memory store as opts says (nil means defaults).
func New(opts *journal.Options) *Store {
	var o journal.Options
	if opts != nil {
		o = *opts
	}
	m := &Store{ns: o.Namespace, now: o.Now, readOnly: o.ReadOnly, records: map[uuid.UUID][]byte{}}
	if m.ns == uuid.Nil {
		m.ns = uuid.New()
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Now returns the store's clock (journal.Options.Now).
func (m *Store) Now() time.Time { return m.now() }

// Namespace returns the store's UUIDv5 namespace.
func (m *Store) Namespace() uuid.UUID { return m.ns }

// get returns the record for key; m.mu is held.
func (m *Store) get(key uuid.UUID) (*journal.Record, error) {
	b, ok := m.records[key]
	if !ok {
		return nil, nil
	}
	r, err := codec.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	return &r, nil
}

func (m *Store) put(r *journal.Record) {
	r.Version = journal.SchemaVersion
	m.records[r.Key] = codec.Encode(nil, r)
}

// lockWrite and lockRead take the lock; neither holds it when they fail.
func (m *Store) lockWrite(ctx context.Context) error { return m.lock(ctx, m.mu.Lock, m.mu.Unlock) }
func (m *Store) lockRead(ctx context.Context) error  { return m.lock(ctx, m.mu.RLock, m.mu.RUnlock) }

func (m *Store) lock(ctx context.Context, lock, unlock func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lock()
	if m.closed {
		unlock()
		return journal.ErrClosed
	}
	return nil
}

// Begin decides what happens to an intent; see journal.Store.
func (m *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := machine.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	if err := m.lockWrite(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	defer m.mu.Unlock()
	cur, err := m.get(req.Key)
	if err != nil {
		return journal.BeginResult{}, err
	}
	now := m.now()
	d := machine.DecideBegin(cur, &req, now)
	if d.Guard {
		for _, b := range m.records {
			s, err := codec.Decode(b)
			if err == nil && machine.GuardBlocks(&s, &req, now) {
				return journal.BeginResult{Outcome: journal.Guarded, Record: s}, nil
			}
		}
	}
	if m.readOnly {
		if d.Write != nil {
			return journal.BeginResult{}, fmt.Errorf("%w: begin %s", journal.ErrReadOnly, req.Key)
		}
		return d.Result, nil // a Mismatch, whose suppression cannot be recorded
	}
	if d.Suppress != nil {
		sc, err := m.get(d.Suppress.Key)
		if err != nil {
			return journal.BeginResult{}, err
		}
		if w := machine.PlaceSuppression(sc, d.Suppress, now); w != nil {
			m.put(w)
		}
	}
	if d.Write != nil {
		m.put(d.Write)
	}
	return d.Result, nil
}

// StartAttempt records a new attempt; see journal.Store.
func (m *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	_, err := m.update(ctx, req.Key, "start attempt", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends the caller's lease; see journal.Store.
func (m *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := machine.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := m.update(ctx, req.Key, "renew", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome; see journal.Store.
func (m *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := machine.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	return m.update(ctx, c.Key, "complete", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyCompletion(cur, &c, now)
	})
}

// Resolve settles a pending or unknown record; see journal.Store.
func (m *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	return m.update(ctx, key, "resolve", func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyResolution(cur, res, now)
	})
}

// update applies fn to the record for key and stores the result.
func (m *Store) update(ctx context.Context, key uuid.UUID, op string, fn func(*journal.Record, time.Time) (journal.Record, error)) (journal.Record, error) {
	if err := m.lockWrite(ctx); err != nil {
		return journal.Record{}, err
	}
	defer m.mu.Unlock()
	if m.readOnly {
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrReadOnly, op, key)
	}
	cur, err := m.get(key)
	if err != nil {
		return journal.Record{}, err
	}
	if cur == nil {
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrNotFound, op, key)
	}
	r, err := fn(cur, m.now())
	if err != nil {
		return journal.Record{}, err
	}
	m.put(&r)
	return r, nil
}

// Get returns the record for key.
func (m *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if err := m.lockRead(ctx); err != nil {
		return journal.Record{}, err
	}
	defer m.mu.RUnlock()
	r, err := m.get(key)
	if err != nil {
		return journal.Record{}, err
	}
	if r == nil {
		return journal.Record{}, fmt.Errorf("%w: %s", journal.ErrNotFound, key)
	}
	return *r, nil
}

// List yields the records matching f, newest first.
func (m *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		if err := m.lockRead(ctx); err != nil {
			yield(journal.Record{}, err)
			return
		}
		var out []*journal.Record
		for key, b := range m.records {
			r, err := codec.Decode(b)
			if err != nil {
				m.mu.RUnlock()
				yield(journal.Record{}, fmt.Errorf("key %s: %w", key, err))
				return
			}
			if machine.MatchFilter(&r, &f) {
				out = append(out, &r)
			}
		}
		m.mu.RUnlock()
		slices.SortFunc(out, machine.NewerFirst)
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		for _, r := range out {
			if err := ctx.Err(); err != nil {
				yield(journal.Record{}, err)
				return
			}
			if !yield(*r, nil) {
				return
			}
		}
	}
}

// GC removes expired records; see journal.Store.
func (m *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	if err := m.lockWrite(ctx); err != nil {
		return journal.GCResult{}, err
	}
	defer m.mu.Unlock()
	if m.readOnly && !opts.DryRun {
		return journal.GCResult{}, fmt.Errorf("%w: gc", journal.ErrReadOnly)
	}
	now := m.now()
	var res journal.GCResult
	for key, b := range m.records {
		r, err := codec.Decode(b)
		if err != nil {
			return res, fmt.Errorf("key %s: %w", key, err)
		}
		switch {
		case journal.Expired(&r, now):
			res.Removed++
			if !opts.DryRun {
				delete(m.records, key)
			}
		case machine.Overdue(&r, now):
			res.KeptUnknown++
		}
	}
	return res, nil
}

// Stats counts the store's records; SizeBytes is their encoded size.
func (m *Store) Stats(ctx context.Context) (journal.Stats, error) {
	if err := m.lockRead(ctx); err != nil {
		return journal.Stats{}, err
	}
	defer m.mu.RUnlock()
	s := machine.NewStats()
	now := m.now()
	for key, b := range m.records {
		r, err := codec.Decode(b)
		if err != nil {
			return journal.Stats{}, fmt.Errorf("key %s: %w", key, err)
		}
		machine.AddStats(&s, &r, now)
		s.SizeBytes += int64(len(b))
	}
	return s, nil
}

// Import writes r as it is; see journal.Store.
func (m *Store) Import(ctx context.Context, r journal.Record) error {
	if err := machine.ValidateImport(&r); err != nil {
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
		r.Version = journal.SchemaVersion
		if machine.EqualRecords(cur, &r) {
			return nil
		}
		return fmt.Errorf("%w: %s", journal.ErrExists, r.Key)
	}
	if m.readOnly {
		return fmt.Errorf("%w: import %s", journal.ErrReadOnly, r.Key)
	}
	m.put(&r)
	return nil
}

// Close releases the store; its records are dropped.
func (m *Store) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return journal.ErrClosed
	}
	m.closed = true
	m.records = nil
	return nil
}

// LocalReads reports that a read of this store is cheap (see harness).
func (m *Store) LocalReads() bool { return true }
