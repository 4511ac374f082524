package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// Verify reads every row of the journal, checking its checksum and
// decoding it, and calls damaged with the key and an error wrapping
// journal.ErrCorrupt (or journal.ErrNewerVersion) for each one that does
// not read. It returns how many rows it read, streamed from one query
// that holds a pooled connection until the scan ends.
func (s *Store) Verify(ctx context.Context, damaged func(key uuid.UUID, err error)) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+s.sql.cols+` FROM `+s.sql.table+` ORDER BY key`)
	if err != nil {
		return 0, s.fail("verify", uuid.Nil, false, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		r, err := scanRow(rows)
		if err == nil {
			_, err = r.record()
		}
		switch {
		case errors.Is(err, journal.ErrCorrupt), errors.Is(err, journal.ErrNewerVersion):
			damaged(r.Key, err)
		case err != nil:
			return n, s.fail("verify", r.Key, false, err)
		}
	}
	if err := rows.Err(); err != nil {
		return n, s.fail("verify", uuid.Nil, false, err)
	}
	return n, nil
}
