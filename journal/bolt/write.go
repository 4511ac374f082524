package bolt

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// StartAttempt records a new attempt; see Store.
func (s *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	_, err := s.update(ctx, req.Key, "start attempt", req.Durable, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyAttempt(cur, &req, now)
	})
	return err
}

// Renew extends the caller's lease; see Store. The renewed record goes to
// the overlay, not the file: after a crash the next open ends every lease
// anyway. The next durable write of the key, or Close, writes it.
func (s *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := machine.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	r, err := s.update(ctx, req.Key, "renew", false, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyRenew(cur, &req, now)
	})
	return r.Lease.Expires, err
}

// Complete records an outcome durably; see Store.
func (s *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := machine.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	return s.update(ctx, c.Key, "complete", true, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyCompletion(cur, &c, now)
	})
}

// Resolve settles a pending or unknown record durably; see Store.
func (s *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	return s.update(ctx, key, "resolve", true, func(cur *journal.Record, now time.Time) (journal.Record, error) {
		return machine.ApplyResolution(cur, res, now)
	})
}

// update applies fn to key's newest record under its lock, and persists.
func (s *Store) update(ctx context.Context, key uuid.UUID, op string, durable bool, fn func(*journal.Record, time.Time) (journal.Record, error)) (journal.Record, error) {
	if err := s.enter(ctx); err != nil {
		return journal.Record{}, err
	}
	defer s.exit()
	if s.readOnly {
		return journal.Record{}, fmt.Errorf("journal %s: %w: %s %s", s.path, journal.ErrReadOnly, op, key)
	}
	st := s.stripe(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	cur, err := s.current(st, key)
	if err != nil {
		return journal.Record{}, err
	}
	if cur == nil {
		return journal.Record{}, fmt.Errorf("%w: %s %s", journal.ErrNotFound, op, key)
	}
	r, err := fn(cur, s.now())
	if err != nil {
		return journal.Record{}, err
	}
	if err := s.persist(st, &r, durable, false); err != nil {
		return journal.Record{}, err
	}
	return r, nil
}

// Import writes r as it is, durably; see Store.
func (s *Store) Import(ctx context.Context, r journal.Record) error {
	if err := machine.ValidateImport(&r); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.exit()
	st := s.stripe(r.Key)
	st.mu.Lock()
	defer st.mu.Unlock()
	cur, err := s.current(st, r.Key)
	if err != nil {
		return err
	}
	if cur != nil {
		r.Version = journal.SchemaVersion
		if machine.EqualRecords(cur, &r) {
			return nil
		}
		return fmt.Errorf("journal %s: %w: %s", s.path, journal.ErrExists, r.Key)
	}
	if s.readOnly {
		return fmt.Errorf("journal %s: %w: import %s", s.path, journal.ErrReadOnly, r.Key)
	}
	return s.persist(st, &r, true, false)
}

// encBufs recycles durable writes' encodings, up to maxPooledEnc bytes.
var encBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledEnc = 16 << 10

// persist records r: durably through the commit loop, or in the overlay
// and the pending log (durably when the log refuses it). The key's stripe
// is locked. persist takes r over: the caller may read r afterwards but
// never change it. fileNone says that the caller found the key neither in
// the overlay nor in the file (overlaid.unfiled).
func (s *Store) persist(st *stripe, r *journal.Record, durable, fileNone bool) error {
	r.Version = journal.SchemaVersion
	prev, inOverlay := st.overlay[r.Key]
	unfiled := prev.unfiled || (!inOverlay && fileNone)
	if !durable && s.pendlog.put(r) {
		if st.overlay == nil {
			st.overlay = map[uuid.UUID]overlaid{}
		}
		st.overlay[r.Key] = overlaid{rec: r, unfiled: unfiled}
		return nil
	}
	buf := encBufs.Get().(*[]byte)
	enc := codec.Encode((*buf)[:0], r)
	err := s.commitPut(r, enc, unfiled)
	// The transaction is over: bbolt and the cache are done with enc.
	if cap(enc) <= maxPooledEnc {
		*buf = enc
		encBufs.Put(buf)
	}
	if err != nil {
		if inOverlay && prev.unfiled {
			// A failed commit may still have reached the file.
			prev.unfiled = false
			st.overlay[r.Key] = prev
		}
		return err
	}
	delete(st.overlay, r.Key)
	s.pendlog.drop(r.Key)
	return nil
}
