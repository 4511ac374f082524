package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
)

// Begin decides what happens to an intent, atomically across every process
// that shares the database.
//
// The common paths take one statement, one round trip: it reads the record
// and, only when there is none, inserts it with INSERT … ON CONFLICT DO
// NOTHING, checking the suppression guard in the same statement. A settled
// record, a mismatch or a live lease is thus answered by a read that writes
// nothing (the transaction never gets a transaction id, so there is no
// WAL and no flush). Everything else (an expired lease to take
// over, an expired record to replace, a Retake, a lost race) runs in a
// transaction holding the record's row lock (SELECT … FOR UPDATE), so no
// decision is check-then-act.
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := s.check(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	if err := checkBegin(req); err != nil {
		return journal.BeginResult{}, err
	}
	now := s.now()
	fresh, err := s.newRow(req, now)
	if err != nil {
		return journal.BeginResult{}, fmt.Errorf("%w: begin: %w", journal.ErrInvalid, err)
	}

	if s.readOnly {
		rec, err := s.get(ctx, req.Key)
		if err == nil {
			if res, ok := decideRead(&rec, &req, now); ok {
				return res, nil
			}
		} else if !errors.Is(err, journal.ErrNotFound) {
			return journal.BeginResult{}, err
		}
		return s.beginReadOnly(ctx, req, now)
	}
	durable := 0
	if req.Durable {
		durable = 1
	}
	var inserted bool
	r, err := scanRowAfter(s.pool.QueryRow(ctx, s.sql.beginFast[req.Guard][durable],
		append(fresh.args(), now.UnixNano())...), &inserted)
	switch {
	case err == nil && inserted:
		return started(r)
	case err == nil:
		rec, err := r.record()
		if err != nil {
			return journal.BeginResult{}, err
		}
		if res, ok := decideRead(&rec, &req, now); ok {
			return res, nil
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return journal.BeginResult{}, s.fail("begin", req.Key, true, err)
	}
	// A write under the lock is needed (take-over, expired record, Retake),
	// or the guard holds, or another Begin inserted the record first.
	for range 8 {
		res, retry, err := s.beginLocked(ctx, req, fresh, now)
		if err != nil {
			// Before COMMIT a lost connection rolls the transaction back.
			var ce *commitError
			return journal.BeginResult{}, s.fail("begin", req.Key, errors.As(err, &ce), err)
		}
		if !retry {
			return res, nil
		}
	}
	return journal.BeginResult{}, fmt.Errorf("postgres journal: begin %s: the record kept changing under concurrent writers", req.Key)
}

func checkBegin(req journal.BeginRequest) error {
	if req.Key == [16]byte{} {
		return fmt.Errorf("%w: begin: zero key", journal.ErrInvalid)
	}
	if req.Guard > journal.GuardOff {
		return fmt.Errorf("%w: begin %s: unknown guard scope %d", journal.ErrInvalid, req.Key, req.Guard)
	}
	return nil
}

func leaseTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return journal.DefaultLeaseTTL
	}
	return d
}

func recordTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return journal.DefaultTTL
	}
	return d
}

// newRow is the record Begin creates for a new intent: pending, attempt 1,
// lease token 1.
func (s *Store) newRow(req journal.BeginRequest, now time.Time) (row, error) {
	rec := journal.Record{
		Version:     journal.SchemaVersion,
		Key:         req.Key,
		Intent:      req.Intent,
		Fingerprint: req.Fingerprint,
		Effect:      req.Effect,
		Input:       req.Input,
		State:       journal.StatePending,
		Attempts:    []journal.Attempt{{ID: req.AttemptID, Start: now}},
		Lease:       journal.Lease{Owner: req.Owner, Token: 1, Expires: now.Add(leaseTTL(req.LeaseTTL))},
		Created:     now,
		Updated:     now,
		Expires:     now.Add(recordTTL(req.RecordTTL)),
	}
	return rowOf(rec)
}

// gone reports whether rec counts as absent: past its TTL and, if pending,
// past its lease too (the rule GC removes by).
func gone(rec *journal.Record, now time.Time) bool {
	return !now.Before(rec.Expires) && (rec.State.Settled() || !now.Before(rec.Lease.Expires))
}

// fingerprintsDiffer reports a payload mismatch; a zero fingerprint on
// either side was not computed and matches anything.
func fingerprintsDiffer(rec *journal.Record, req *journal.BeginRequest) bool {
	return !rec.Fingerprint.IsZero() && !req.Fingerprint.IsZero() && rec.Fingerprint != req.Fingerprint
}

// decideRead answers Begin from a live record when the answer needs no
// write; ok is false when it does (or when the record is gone).
func decideRead(rec *journal.Record, req *journal.BeginRequest, now time.Time) (journal.BeginResult, bool) {
	switch {
	case gone(rec, now):
		return journal.BeginResult{}, false
	case fingerprintsDiffer(rec, req):
		return journal.BeginResult{Outcome: journal.Mismatch, Record: *rec}, true
	case rec.State.Settled():
		if retake(rec, req) {
			return journal.BeginResult{}, false
		}
		return journal.BeginResult{Outcome: journal.Completed, Record: *rec}, true
	case now.Before(rec.Lease.Expires):
		return journal.BeginResult{Outcome: journal.InFlight, Record: *rec}, true
	}
	return journal.BeginResult{}, false
}

// retake asks req.Retake about a settled record, on a copy: the callback
// cannot change the record Begin answers with.
func retake(rec *journal.Record, req *journal.BeginRequest) bool {
	if req.Retake == nil {
		return false
	}
	c := *rec
	c.Attempts = append([]journal.Attempt(nil), rec.Attempts...)
	if rec.Resolution != nil {
		res := *rec.Resolution
		c.Resolution = &res
	}
	return req.Retake(&c)
}

func started(r row) (journal.BeginResult, error) {
	rec, err := r.record()
	if err != nil {
		return journal.BeginResult{}, err
	}
	return journal.BeginResult{Outcome: journal.Started, Record: rec, Token: rec.Lease.Token}, nil
}

// beginReadOnly finishes Begin on a read-only store when the answer was not
// a plain read: a guarded intent is still reported, anything that would
// write is refused.
func (s *Store) beginReadOnly(ctx context.Context, req journal.BeginRequest, now time.Time) (journal.BeginResult, error) {
	rec, err := s.get(ctx, req.Key)
	absent := errors.Is(err, journal.ErrNotFound) || (err == nil && gone(&rec, now))
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return journal.BeginResult{}, err
	}
	if absent && req.Guard != journal.GuardOff {
		gr, err := scanRow(s.pool.QueryRow(ctx, s.sql.guard[req.Guard], req.Intent.Tenant, req.Intent.Session,
			req.Intent.Turn, req.Intent.Tool, now.UnixNano(), req.Key))
		if err == nil {
			g, err := gr.record()
			if err != nil {
				return journal.BeginResult{}, err
			}
			return journal.BeginResult{Outcome: journal.Guarded, Record: g}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return journal.BeginResult{}, s.fail("begin", req.Key, false, err)
		}
	}
	return journal.BeginResult{}, fmt.Errorf("%w: begin %s", journal.ErrReadOnly, req.Key)
}

// commitError marks a failed COMMIT: the only step of a multi-statement
// transaction whose failure leaves the outcome in doubt.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// beginLocked decides under the record's row lock. retry is true when a
// concurrent Begin inserted the record between our lock and our insert.
func (s *Store) beginLocked(ctx context.Context, req journal.BeginRequest, fresh row, now time.Time) (res journal.BeginResult, retry bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// asyncCommit applies BeginRequest.Durable to this transaction.
	asyncCommit := func() error {
		if req.Durable {
			return nil
		}
		_, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`)
		return err
	}
	r, err := scanRow(tx.QueryRow(ctx, s.sql.lockForTx, req.Key))
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return res, false, err
	}
	var rec journal.Record
	if found {
		if rec, err = r.record(); err != nil {
			return res, false, err
		}
		if res, ok := decideRead(&rec, &req, now); ok {
			return res, false, nil
		}
	}
	if found && !gone(&rec, now) {
		settled := rec.State.Settled()
		// Pending with an expired lease, or a settled record the caller
		// retakes: the caller becomes the owner under the next token.
		r, err := scanRow(tx.QueryRow(ctx, s.sql.takeOver, req.Key, req.Owner,
			now.Add(leaseTTL(req.LeaseTTL)).UnixNano(), now.UnixNano(), now.Add(recordTTL(req.RecordTTL)).UnixNano()))
		if err != nil {
			return res, false, err
		}
		if rec, err = r.record(); err != nil {
			return res, false, err
		}
		// A retake replaces a settled outcome: always durable, so that a
		// server crash cannot bring back the outcome the caller overrode.
		if !settled {
			if err := asyncCommit(); err != nil {
				return res, false, err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return res, false, &commitError{err}
		}
		return journal.BeginResult{Outcome: journal.TakenOver, Record: rec, Token: rec.Lease.Token}, false, nil
	}
	// No live record: the guard decides, then a new record is written.
	if req.Guard != journal.GuardOff {
		gr, err := scanRow(tx.QueryRow(ctx, s.sql.guard[req.Guard], req.Intent.Tenant, req.Intent.Session,
			req.Intent.Turn, req.Intent.Tool, now.UnixNano(), req.Key))
		if err == nil {
			g, err := gr.record()
			if err != nil {
				return res, false, err
			}
			return journal.BeginResult{Outcome: journal.Guarded, Record: g}, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return res, false, err
		}
	}
	if found {
		// Replace the expired record; the token keeps rising so that an
		// owner of the old record can never complete the new one.
		fresh.LeaseToken = r.LeaseToken + 1
		r, err = scanRow(tx.QueryRow(ctx, s.sql.replace, fresh.args()...))
	} else {
		r, err = scanRow(tx.QueryRow(ctx, s.sql.insertLocked, fresh.args()...))
		if errors.Is(err, pgx.ErrNoRows) {
			return res, true, nil
		}
	}
	if err != nil {
		return res, false, err
	}
	if err := asyncCommit(); err != nil {
		return res, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, false, &commitError{err}
	}
	res, err = started(r)
	return res, false, err
}
