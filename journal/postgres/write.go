package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// StartAttempt closes the open attempt, appends a new one and extends the
// lease, in one fenced UPDATE.
func (s *Store) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	if err := s.checkWrite(ctx, "start attempt", req.Key); err != nil {
		return err
	}
	if req.Key == uuid.Nil {
		return fmt.Errorf("%w: start attempt: zero key", journal.ErrInvalid)
	}
	closing, err := closeAttempt(req.PrevClass, req.PrevError)
	if err != nil {
		return err
	}
	var settle *int64
	if req.Settle > 0 {
		n := int64(req.Settle)
		settle = &n
	}
	var n int
	err = s.pool.QueryRow(ctx, s.sql.startAtt[index(req.Durable)], keyArg(req.Key), int64(req.Token), closing,
		cleanText(req.ID), int64(machine.LeaseTTL(req.LeaseTTL)), settle, s.clockArg()).Scan(&n)
	if err != nil {
		return s.fail("start attempt", req.Key, true, err)
	}
	if n == 0 {
		return s.whyNot(ctx, "start attempt", req.Key)
	}
	return nil
}

// Renew extends the caller's lease in one fenced UPDATE, committed without
// waiting for the WAL flush: a renewal lost in a server crash only shortens
// a lease.
func (s *Store) Renew(ctx context.Context, req journal.RenewRequest) (time.Time, error) {
	if err := machine.ValidateRenew(&req); err != nil {
		return time.Time{}, err
	}
	if err := s.checkWrite(ctx, "renew", req.Key); err != nil {
		return time.Time{}, err
	}
	var exp int64
	err := s.pool.QueryRow(ctx, s.sql.renew, keyArg(req.Key), int64(req.Token),
		int64(machine.LeaseTTL(req.LeaseTTL)), s.clockArg()).Scan(&exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, s.whyNot(ctx, "renew", req.Key)
	}
	if err != nil {
		return time.Time{}, s.fail("renew", req.Key, true, err)
	}
	return fromNanos(exp), nil
}

// closeAttempt is the jsonb object merged into the open attempt to close
// it, with the end the SQL sets (closeLast); the attempt keeps its id and
// start.
func closeAttempt(class, msg string) (string, error) {
	b, err := json.Marshal(struct {
		Class string `json:"class,omitempty"`
		Error string `json:"error,omitempty"`
	}{cleanText(class), cleanText(msg)})
	return string(b), err
}

// whyNot explains a fenced write that matched no row: the record is gone
// (journal.ErrNotFound) or it is not pending under that token
// (journal.ErrFenced).
func (s *Store) whyNot(ctx context.Context, op string, key uuid.UUID) error {
	var state int16
	var token int64
	err := s.pool.QueryRow(ctx, s.sql.fence, keyArg(key)).Scan(&state, &token)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return keyError(op, key, journal.ErrNotFound)
	case err != nil:
		return s.fail(op, key, false, err)
	}
	return keyError(op, key, journal.ErrFenced)
}

// Complete records the outcome in one fenced UPDATE, committed
// synchronously. If the connection fails after the UPDATE was sent the
// error wraps ErrOutcomeUncertain: the outcome may or may not be recorded.
func (s *Store) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	if err := machine.ValidateCompletion(&c); err != nil {
		return journal.Record{}, err
	}
	if err := s.checkWrite(ctx, "complete", c.Key); err != nil {
		return journal.Record{}, err
	}
	args, err := completeArgs(c, s.clockArg())
	if err != nil {
		return journal.Record{}, err
	}
	r, err := scanRow(s.pool.QueryRow(ctx, s.sql.complete, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, s.whyNot(ctx, "complete", c.Key)
	}
	if err != nil {
		return journal.Record{}, s.fail("complete", c.Key, true, err)
	}
	return r.record()
}

func completeArgs(c journal.Completion, clock *int64) ([]any, error) {
	closing, err := closeAttempt(c.ErrorClass, c.ErrorMessage)
	if err != nil {
		return nil, err
	}
	return []any{keyArg(c.Key), int64(c.Token), int16(c.State), c.Output, cleanText(c.ErrorClass),
		cleanText(c.ErrorMessage), closing, clock}, nil
}

// CompleteInTx runs effect inside the transaction that records the intent
// as succeeded with effect's output: both commit or neither does.
//
// It first locks the record and checks the fence (journal.ErrNotFound,
// journal.ErrFenced), so a stale owner never runs the effect. If effect
// returns an error the transaction is rolled back, nothing is recorded and
// the error is returned as is: the effect provably did not happen. If the
// connection fails while committing, the error wraps ErrOutcomeUncertain;
// since effect and outcome commit together, a later Get tells which
// happened: a succeeded record means both, a pending one neither.
//
// effect must use tx for its writes (the pool's other connections are
// outside the transaction) and must not commit or roll it back. While it
// runs, the record's row lock makes concurrent Begins of the same key wait.
func (s *Store) CompleteInTx(ctx context.Context, key uuid.UUID, token uint64,
	effect func(ctx context.Context, tx pgx.Tx) (output []byte, err error)) (journal.Record, error) {
	if key == uuid.Nil {
		return journal.Record{}, fmt.Errorf("%w: complete in tx: zero key", journal.ErrInvalid)
	}
	if err := s.checkWrite(ctx, "complete in tx", key); err != nil {
		return journal.Record{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return journal.Record{}, s.fail("complete in tx", key, false, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	r, err := scanRow(tx.QueryRow(ctx, s.sql.lockForTx, keyArg(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, keyError("complete in tx", key, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Record{}, s.fail("complete in tx", key, false, err)
	}
	if r.State != int16(journal.StatePending) || uint64(r.LeaseToken) != token {
		return journal.Record{}, keyError("complete in tx", key, journal.ErrFenced)
	}
	out, err := effect(ctx, tx)
	if err != nil {
		return journal.Record{}, err
	}
	args, err := completeArgs(journal.Completion{Key: key, Token: token, State: journal.StateSucceeded, Output: out},
		s.clockArg())
	if err != nil {
		return journal.Record{}, err
	}
	r, err = scanRow(tx.QueryRow(ctx, s.sql.complete, args...))
	if err != nil {
		// Not committed: the transaction is rolled back with the effect.
		return journal.Record{}, s.fail("complete in tx", key, false, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return journal.Record{}, s.fail("complete in tx", key, true, err)
	}
	return r.record()
}

// Resolve settles a pending or unknown record as an operator's verdict and
// advances the fencing token, in one UPDATE under the record's row lock,
// taken by reading the state it replaces, which the counts need. An
// approval or a rejection (or a verdict naming a fingerprint) is
// machine.ApplyResolution's, written under the row lock.
func (s *Store) Resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	if err := s.checkWrite(ctx, "resolve", key); err != nil {
		return journal.Record{}, err
	}
	if err := machine.ValidateResolution(key, &res); err != nil {
		return journal.Record{}, err
	}
	reason := cleanText(res.Reason)
	closing, err := closeAttempt(journal.ClassResolved, reason)
	if err != nil {
		return journal.Record{}, err
	}
	var rec journal.Record
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if res.State == journal.StatePending || res.State == journal.StateSuppressed || !res.Fingerprint.IsZero() {
			rec, err = s.decide(ctx, tx, key, res)
			return err
		}
		var state int16
		if err := tx.QueryRow(ctx, s.sql.lockState, keyArg(key)).Scan(&state); err != nil {
			return err
		}
		r, err := scanRow(tx.QueryRow(ctx, s.sql.resolve, keyArg(key), int16(res.State), res.Output,
			reason, cleanText(res.By), s.clockArg(), closing, state))
		if err == nil {
			rec, err = r.record()
		}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := s.get(ctx, key)
		if err != nil {
			return journal.Record{}, err
		}
		return journal.Record{}, fmt.Errorf("%w: resolve %s: it is %s", journal.ErrNotResolvable, key, cur.State)
	}
	if err != nil {
		var ce *commitError
		return journal.Record{}, s.fail("resolve", key, errors.As(err, &ce), err)
	}
	return rec, nil
}

// decide applies res to the record of key under its row lock in tx and
// writes the record it makes.
func (s *Store) decide(ctx context.Context, tx pgx.Tx, key uuid.UUID, res journal.Resolution) (journal.Record, error) {
	cur, now, err := s.lockRecord(ctx, tx, key)
	if err == nil && cur == nil {
		err = keyError("resolve", key, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Record{}, err
	}
	rec, err := machine.ApplyResolution(cur, res, now)
	if err != nil {
		return journal.Record{}, err
	}
	w, err := rowOf(rec)
	if err != nil {
		return journal.Record{}, fmt.Errorf("%w: resolve: %w", journal.ErrInvalid, err)
	}
	_, err = tx.Exec(ctx, s.sql.replace, w.args()...)
	return rec, err
}

// inTx runs fn in a transaction and commits it. A failed COMMIT is a
// *commitError: before it, a lost connection rolls the transaction back.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err}
	}
	return nil
}

// Import writes rec as it is. A record already stored under its key is left
// alone if identical (compared in stored form) and refused with
// journal.ErrExists otherwise.
//
// The record is stored with this package's schema version, as every
// store in package journal does.
func (s *Store) Import(ctx context.Context, rec journal.Record) error {
	if err := machine.ValidateImport(&rec); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	rec.Version = journal.SchemaVersion
	r, err := rowOf(rec)
	if err != nil {
		return fmt.Errorf("%w: import: %w", journal.ErrInvalid, err)
	}
	// A record found by the insert may be gone by the comparison (GC or
	// an operator deleted it meanwhile): then the insert is tried again.
	for range 8 {
		if !s.readOnly {
			var n int
			if err := s.pool.QueryRow(ctx, s.sql.importRow, r.args()...).Scan(&n); err != nil {
				return s.fail("import", rec.Key, true, err)
			}
			if n == 1 {
				return nil
			}
		}
		have, err := scanRow(s.pool.QueryRow(ctx, s.sql.get, keyArg(rec.Key)))
		switch {
		case errors.Is(err, pgx.ErrNoRows) && s.readOnly:
			return fmt.Errorf("%w: import %s", journal.ErrReadOnly, rec.Key)
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return s.fail("import", rec.Key, false, err)
		case !sameRow(have, r):
			return keyError("import", rec.Key, journal.ErrExists)
		}
		return nil
	}
	return fmt.Errorf("postgres journal: import %s: the record kept changing under concurrent writers", rec.Key)
}

// sameRow compares two rows as stored; the jsonb columns compare as JSON
// values, since jsonb does not keep the text it was given.
func sameRow(a, b row) bool {
	if !sameJSON(a.Attempts, b.Attempts) || !sameJSON(a.Approval, b.Approval) {
		return false
	}
	a.Attempts, b.Attempts, a.Approval, b.Approval = nil, nil, nil, nil
	norm := func(p []byte) []byte {
		if len(p) == 0 {
			return nil
		}
		return p
	}
	a.Input, b.Input = norm(a.Input), norm(b.Input)
	a.Output, b.Output = norm(a.Output), norm(b.Output)
	a.ResOutput, b.ResOutput = norm(a.ResOutput), norm(b.ResOutput)
	return reflect.DeepEqual(a, b)
}

// sameJSON reports whether two JSON texts (nil for NULL) hold the same
// value, numbers compared as written.
func sameJSON(a, b []byte) bool {
	var v [2]any
	for i, p := range [][]byte{a, b} {
		if p == nil {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		if d.Decode(&v[i]) != nil {
			return false
		}
	}
	return (a == nil) == (b == nil) && reflect.DeepEqual(v[0], v[1])
}
