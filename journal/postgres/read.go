package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
)

// Get returns the record for key, or an error wrapping journal.ErrNotFound.
func (s *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if err := s.check(ctx); err != nil {
		return journal.Record{}, err
	}
	return s.get(ctx, key)
}

func (s *Store) get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	r, err := scanRow(s.pool.QueryRow(ctx, s.sql.get, keyArg(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Record{}, keyError("get", key, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Record{}, s.fail("get", key, false, err)
	}
	return r.record()
}

// List yields the records matching f, newest first (ties by key, descending), from one
// query whose rows are streamed while the loop runs. The filters use the
// indexes described in the package documentation.
func (s *Store) List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error] {
	return func(yield func(journal.Record, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(journal.Record{}, err)
			return
		}
		var where []string
		var args []any
		for _, c := range []struct {
			cond string
			v    any
			set  bool
		}{
			{"tenant = $%d", f.Tenant, f.Tenant != ""}, {"session = $%d", f.Session, f.Session != ""},
			{"turn = $%d", f.Turn, f.Turn != ""}, {"tool = $%d", f.Tool, f.Tool != ""},
			{"state = $%d", int16(f.State), f.State != 0},
			{"created_ns >= $%d", f.Since.UnixNano(), !f.Since.IsZero()},
			{"created_ns < $%d", f.Until.UnixNano(), !f.Until.IsZero()},
		} {
			if c.set {
				args = append(args, c.v)
				where = append(where, fmt.Sprintf(c.cond, len(args)))
			}
		}
		q := `SELECT ` + s.sql.cols + ` FROM ` + s.sql.table
		if len(where) > 0 {
			q += ` WHERE ` + strings.Join(where, " AND ")
		}
		q += ` ORDER BY created_ns DESC, key DESC`
		if f.Limit > 0 {
			q += fmt.Sprintf(` LIMIT %d`, f.Limit)
		}
		rows, err := s.pool.Query(ctx, q, args...)
		if err == nil {
			defer rows.Close()
			for err == nil && rows.Next() {
				var r row
				if r, err = scanRow(rows); err == nil {
					if rec, err := r.record(); !yield(rec, err) {
						return
					}
				}
			}
			err = cmp.Or(err, rows.Err())
		}
		if err != nil {
			yield(journal.Record{}, s.fail("list", uuid.Nil, false, err))
		}
	}
}

// GC deletes the expired records in one statement through the index on
// expires_ns, and counts the unknown and pending ones past their TTL.
func (s *Store) GC(ctx context.Context, opts journal.GCOptions) (journal.GCResult, error) {
	var res journal.GCResult
	if err := s.check(ctx); err != nil {
		return res, err
	}
	q, write := s.sql.gcDelete, true
	if opts.DryRun {
		q, write = s.sql.gcCount, false
	} else if s.readOnly {
		return res, fmt.Errorf("%w: gc", journal.ErrReadOnly)
	}
	if err := s.pool.QueryRow(ctx, q, s.clockArg()).Scan(&res.Removed, &res.KeptUnknown); err != nil {
		return journal.GCResult{}, s.fail("gc", uuid.Nil, write, err)
	}
	return res, nil
}

// Stats counts the records in one REPEATABLE READ snapshot and round
// trip: Expired and OverdueUnknown through the index on expires_ns, the
// rest from every row (docs/postgres.md, "Stats").
func (s *Store) Stats(ctx context.Context) (journal.Stats, error) {
	if err := s.check(ctx); err != nil {
		return journal.Stats{}, err
	}
	st := journal.Stats{ByState: map[journal.State]int{}, ByTool: map[string]int{}}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return journal.Stats{}, s.fail("stats", uuid.Nil, false, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var b pgx.Batch
	b.Queue(s.sql.statsIndexed, s.clockArg(), s.sql.table)
	b.Queue(s.sql.statsScan)
	br := tx.SendBatch(ctx, &b)
	if err := cmp.Or(scanStats(br, &st), br.Close()); err != nil {
		return journal.Stats{}, s.fail("stats", uuid.Nil, false, err)
	}
	return st, nil
}

// ScanStats is Stats, which reads every record (schema 7 on); agentctl
// stats --scan, the check of counts an older schema kept, calls it.
func (s *Store) ScanStats(ctx context.Context) (journal.Stats, error) { return s.Stats(ctx) }

// scanStats reads the results of Stats's batch into st. The counts come
// by tool, with a column per state (tally.scan); a state whose count is
// zero is left out of ByState, as every store leaves it out.
func scanStats(br pgx.BatchResults, st *journal.Stats) error {
	if err := br.QueryRow().Scan(&st.Expired, &st.OverdueUnknown, &st.SizeBytes); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	var tool string
	byState := make([]int64, len(rows.FieldDescriptions())-4)
	var attempts, oldest, newest int64
	dest := []any{&tool}
	for i := range byState {
		dest = append(dest, &byState[i])
	}
	dest = append(dest, &attempts, &oldest, &newest)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if st.Oldest.IsZero() || fromNanos(oldest).Before(st.Oldest) {
			st.Oldest = fromNanos(oldest)
		}
		if fromNanos(newest).After(st.Newest) {
			st.Newest = fromNanos(newest)
		}
		var n int64
		for i, c := range byState {
			n += c
			st.ByState[journal.State(i+1)] += int(c)
		}
		if n != 0 {
			st.ByTool[tool] = int(n)
		}
		st.Records += int(n)
		st.Attempts += int(attempts)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for state, n := range st.ByState {
		if n == 0 {
			delete(st.ByState, state)
		}
	}
	return nil
}
