package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentonce/agentonce/journal"
)

// Errors returned while opening a journal. Open also returns
// journal.ErrNewerVersion when the schema was migrated by a newer version of
// this package, and journal.ErrNamespaceMismatch when
// Options.Journal.Namespace differs from the one the fleet stored.
var (
	// ErrNoJournal is returned by a read-only Open when the schema holds no
	// journal (a read-only store never creates one).
	// It is journal.ErrNoJournal.
	ErrNoJournal = journal.ErrNoJournal
	// ErrNotDurable is returned by Open when the server does not flush every
	// commit (synchronous_commit or fsync off), unless AllowUnsyncedWrites.
	ErrNotDurable = errors.New("postgres journal: the server does not flush every commit")
)

// Errors returned by Store methods.
var (
	// ErrOutcomeUncertain is returned, wrapping the cause, by a write whose
	// connection failed after the statement or COMMIT was sent: it may or
	// may not have committed, and a later Get shows which. It is
	// journal.ErrOutcomeUncertain.
	ErrOutcomeUncertain = journal.ErrOutcomeUncertain
)

// uncertain reports whether err, returned by a statement or COMMIT that
// writes, leaves it open whether the write committed.
//
// Certain, nothing committed: an error before anything was sent
// (pgconn.SafeToRetry), a client-side pgx error, a server ERROR.
// Uncertain: FATAL, PANIC, SQLSTATE 08…, and any failure of the connection
// after the request was sent (an implicit transaction commits at Sync,
// after the statement's result was sent).
func uncertain(err error) bool {
	if err == nil || pgconn.SafeToRetry(err) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		sev := pe.SeverityUnlocalized
		if sev == "" {
			sev = pe.Severity
		}
		return sev == "FATAL" || sev == "PANIC" || strings.HasPrefix(pe.Code, "08")
	}
	// pgconn's connection failures carry SafeToRetry (false once sent).
	var conn interface{ SafeToRetry() bool }
	var nerr net.Error
	return errors.As(err, &conn) || errors.As(err, &nerr) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
