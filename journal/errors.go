package journal

import "errors"

// Errors returned while opening a journal.
var (
	// ErrInUse is returned when another process holds the journal file's
	// lock past bolt.Options.LockTimeout (journal/bolt).
	ErrInUse = errors.New("journal in use by another process")
	// ErrCorrupt is returned when a file is not a journal or is damaged,
	// or a stored record's checksum does not match its bytes.
	ErrCorrupt = errors.New("journal file is corrupt or not a journal")
	// ErrNewerVersion is returned when a journal or record was written by a
	// newer schema version than this package reads.
	ErrNewerVersion = errors.New("journal written by a newer version")
	// ErrNamespaceMismatch is returned when Options.Namespace differs from
	// the journal's: every key would silently change.
	ErrNamespaceMismatch = errors.New("namespace differs from the journal's")
	// ErrNoJournal is returned when a journal that must exist does not.
	ErrNoJournal = errors.New("expected journal not found")
)

// Errors returned by Store methods.
var (
	// ErrNotFound is returned when no record exists for a key.
	ErrNotFound = errors.New("no record for key")
	// ErrFenced is returned when a caller's fencing token is no longer the
	// record's. Nothing was written.
	ErrFenced = errors.New("lease lost: record owned by another attempt")
	// ErrNotResolvable is returned when Resolve is asked to settle a record
	// that is already settled other than as unknown.
	ErrNotResolvable = errors.New("record is already settled")
	// ErrExists is returned by Import when a different record already has
	// the key.
	ErrExists = errors.New("a different record exists for key")
	// ErrReadOnly is returned when a write is asked of a read-only store.
	ErrReadOnly = errors.New("journal opened read-only")
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("journal closed")
	// ErrInvalid is returned when a request is malformed; the wrapping
	// error says how.
	ErrInvalid = errors.New("invalid request")
	// ErrOutcomeUncertain is returned by a write to a remote store when the
	// connection failed after the write was sent: it may have committed. A
	// later Get tells.
	ErrOutcomeUncertain = errors.New("outcome uncertain: connection lost after the write was sent")
)
