package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Begin decides what happens to an intent, atomically across every process
// that shares the database: one statement that reads the record and inserts
// it only when there is none (a replay writes nothing), else a transaction
// holding the record's row lock; never check-then-act. Every decision is
// machine.DecideBegin's (docs/postgres.md, "Claims, leases and fencing").
func (s *Store) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	if err := s.check(ctx); err != nil {
		return journal.BeginResult{}, err
	}
	if err := machine.ValidateBegin(&req); err != nil {
		return journal.BeginResult{}, err
	}
	if s.readOnly {
		return s.beginReadOnly(ctx, req)
	}
	args, err := beginFastArgs(&req)
	if err != nil {
		return journal.BeginResult{}, fmt.Errorf("%w: begin: %w", journal.ErrInvalid, err)
	}
	var inserted bool
	var nowNs int64
	var r row
	err = pgx.ErrNoRows
	if args != nil {
		r, err = scanRow(s.pool.QueryRow(ctx, s.sql.beginFast[index(req.Guard != journal.GuardOff)][index(req.Durable)],
			append(args, s.clockArg())...), &inserted, &nowNs)
	}
	switch {
	case err == nil:
		rec, err := r.record()
		if err != nil {
			return journal.BeginResult{}, err
		}
		if inserted {
			return journal.BeginResult{Outcome: journal.Started, Record: rec, Token: rec.Lease.Token}, nil
		}
		if d := machine.DecideBegin(&rec, &req, fromNanos(nowNs)); d.Write == nil && d.Suppress == nil && !d.Guard {
			return d.Result, nil
		}
	case isUniqueViolation(err):
		// Another Begin inserted the record first: decided below.
	case !errors.Is(err, pgx.ErrNoRows):
		return journal.BeginResult{}, s.fail("begin", req.Key, true, err)
	}
	// A write under the lock is needed (take-over, expired record, Retake),
	// or a suppression may guard the intent, or another Begin inserted the
	// record first.
	for range 8 {
		res, retry, err := s.beginLocked(ctx, req)
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

// isUniqueViolation reports whether err is PostgreSQL's unique_violation:
// the fast path's INSERT of a key another Begin inserted first.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// epoch is the instant beginFastArgs decides a new record at, so that its
// times are offsets that the fast path's SQL adds to the server's clock.
var epoch = time.Unix(0, 0).UTC()

// beginFastArgs are the fast path's parameters $1 to $16: the record
// machine.DecideBegin makes for a new intent, its times relative to epoch;
// none for one that needs approval.
func beginFastArgs(req *journal.BeginRequest) ([]any, error) {
	if req.Approvals > 0 {
		return nil, nil
	}
	rec := *machine.DecideBegin(nil, req, epoch).Write
	r, err := rowOf(rec)
	if err != nil {
		return nil, err
	}
	a := rec.Attempts[0]
	var settle *int64
	if !a.QuietAt.IsZero() {
		n := int64(a.QuietAt.Sub(a.Start))
		settle = &n
	}
	return []any{keyArg(r.Key), r.Version, r.Tenant, r.Session, r.Turn, r.Tool, r.Discriminator,
		r.Fingerprint, r.Effect, r.Input, cleanText(a.ID), r.LeaseOwner, r.LeaseToken,
		int64(rec.Lease.Expires.Sub(epoch)), settle, int64(rec.Expires.Sub(epoch))}, nil
}

// index is 1 for true and 0 for false, an index of the statements that
// come in pairs.
func index(b bool) int {
	if b {
		return 1
	}
	return 0
}

// beginReadOnly decides Begin on a read-only store: an answer that needs
// no write is given (a guarded intent is reported too), anything that would
// write is refused.
func (s *Store) beginReadOnly(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	now, err := s.serverNow(ctx, s.pool)
	if err != nil {
		return journal.BeginResult{}, s.fail("begin", req.Key, false, err)
	}
	var cur *journal.Record
	rec, err := s.get(ctx, req.Key)
	switch {
	case err == nil:
		cur = &rec
	case !errors.Is(err, journal.ErrNotFound):
		return journal.BeginResult{}, err
	}
	d := machine.DecideBegin(cur, &req, now)
	if d.Guard {
		g, err := s.guard(ctx, s.pool, &req, now)
		if err != nil {
			return journal.BeginResult{}, s.fail("begin", req.Key, false, err)
		}
		if g != nil {
			return journal.BeginResult{Outcome: journal.Guarded, Record: *g}, nil
		}
	}
	if d.Write != nil {
		return journal.BeginResult{}, fmt.Errorf("%w: begin %s", journal.ErrReadOnly, req.Key)
	}
	return d.Result, nil // with a Mismatch, whose suppression cannot be recorded
}

// guard returns the newest suppressed record that machine.GuardBlocks
// req, or nil. The query selects candidates by tenant, session and tool
// only (the guard index's prefix); the rule itself is the journal's.
func (s *Store) guard(ctx context.Context, q querier, req *journal.BeginRequest, now time.Time) (*journal.Record, error) {
	rows, err := q.Query(ctx, s.sql.guard, req.Intent.Tenant, req.Intent.Session, req.Intent.Tool, keyArg(req.Key))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		g, err := r.record()
		if err != nil {
			return nil, err
		}
		if machine.GuardBlocks(&g, req, now) {
			return &g, nil
		}
	}
	return nil, rows.Err()
}

// querier is what guard needs of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// commitError marks a failed COMMIT: the only step of a multi-statement
// transaction whose failure leaves the outcome in doubt.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// beginLocked decides under the record's row lock (SELECT … FOR UPDATE)
// and carries the decision out in the same transaction. retry is true when
// a concurrent Begin inserted the record between our read and our insert.
func (s *Store) beginLocked(ctx context.Context, req journal.BeginRequest) (res journal.BeginResult, retry bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	cur, now, err := s.lockRecord(ctx, tx, req.Key)
	if err != nil {
		return res, false, err
	}
	found := cur != nil
	d := machine.DecideBegin(cur, &req, now)
	if d.Guard {
		g, err := s.guard(ctx, tx, &req, now)
		if err != nil {
			return res, false, err
		}
		if g != nil {
			return journal.BeginResult{Outcome: journal.Guarded, Record: *g}, false, nil
		}
	}
	if d.Suppress != nil {
		if err := s.placeSuppression(ctx, tx, d.Suppress, now); err != nil {
			return res, false, err
		}
		if err := tx.Commit(ctx); err != nil {
			return res, false, &commitError{err}
		}
		return d.Result, false, nil
	}
	if d.Write == nil {
		return d.Result, false, nil
	}
	w, err := rowOf(*d.Write)
	if err != nil {
		return res, false, fmt.Errorf("%w: begin: %w", journal.ErrInvalid, err)
	}
	if found {
		_, err = tx.Exec(ctx, s.sql.replace, w.args()...)
	} else {
		var n int
		err = tx.QueryRow(ctx, s.sql.importRow, w.args()...).Scan(&n)
		if err == nil && n == 0 {
			return res, true, nil
		}
	}
	if err != nil {
		return res, false, err
	}
	// A retake replaces a settled outcome: always durable, so that a server
	// crash cannot bring back the outcome the caller overrode.
	if !req.Durable && !d.Durable {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return res, false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, false, &commitError{err}
	}
	return d.Result, false, nil
}

// lockRecord reads the record of key (nil when there is none) under its
// row lock, and then the server's clock, in one round trip: the clock is
// read once the lock is held, and decides what the caller writes.
func (s *Store) lockRecord(ctx context.Context, tx pgx.Tx, key uuid.UUID) (*journal.Record, time.Time, error) {
	var b pgx.Batch
	b.Queue(s.sql.lockForTx, keyArg(key))
	b.Queue(s.sql.now, s.clockArg())
	br := tx.SendBatch(ctx, &b)
	r, err := scanRow(br.QueryRow())
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		_ = br.Close()
		return nil, time.Time{}, err
	}
	var nowNs int64
	err = br.QueryRow().Scan(&nowNs)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil || !found {
		return nil, fromNanos(nowNs), err
	}
	rec, err := r.record()
	return &rec, fromNanos(nowNs), err
}

// placeSuppression writes the suppression a Mismatch arms the guard with,
// in the mismatch's transaction, under the suppression key's row lock.
func (s *Store) placeSuppression(ctx context.Context, tx pgx.Tx, sup *journal.Record, now time.Time) error {
	r, err := scanRow(tx.QueryRow(ctx, s.sql.lockForTx, keyArg(sup.Key)))
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var cur *journal.Record
	if found {
		rec, err := r.record()
		if err != nil {
			return err
		}
		cur = &rec
	}
	w := machine.PlaceSuppression(cur, sup, now)
	if w == nil {
		return nil
	}
	row, err := rowOf(*w)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", journal.ErrInvalid, err)
	}
	if found {
		_, err = tx.Exec(ctx, s.sql.replace, row.args()...)
	} else {
		// A concurrent mismatch may insert it first: then it is there.
		_, err = tx.Exec(ctx, s.sql.importRow, row.args()...)
	}
	return err
}
