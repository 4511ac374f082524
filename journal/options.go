package journal

import (
	"time"

	"github.com/google/uuid"
)

// Options configures a store: what every store shares. A nil *Options
// means defaults; each field's zero value is its default. A store's own
// settings are in its package's Options (journal/bolt's, journal/postgres's),
// which hold these by value as their Journal field; through Open they
// travel in StoreOptions.
type Options struct {
	// Namespace is the secret UUIDv5 namespace for a new journal. Zero
	// means: keep the one stored in the journal, or generate one at random
	// when the journal is created. A non-zero value that differs from the
	// stored one is an error (keys would silently change).
	Namespace uuid.UUID

	// ReadOnly opens the journal for inspection: every write returns
	// ErrReadOnly and the journal is never modified.
	ReadOnly bool

	// Now is the wall clock, a test seam: nil means time.Now. Alone (with
	// Monotonic nil), it is the store's clock, trusted as it is, by which
	// the store judges leases, settle windows and TTLs: every move of a
	// fake clock counts as real time passing. The bbolt and in-memory
	// stores use it; the PostgreSQL store ignores it (the database server's
	// clock decides; postgres.Options.TestClock stands in for that one).
	Now func() time.Time

	// Monotonic, a test seam beside Now, is the clock by which the bbolt
	// store measures how much real time passed, so that a jump of the wall
	// clock (Now) moves none of its judgments: it returns the clock's epoch
	// (its origin: readings of one epoch are comparable, across processes)
	// and the time elapsed since it, which never goes backward within an
	// epoch. Nil means the host's: on Linux the boot's id and the time
	// since boot (CLOCK_BOOTTIME), elsewhere the process and Go's monotonic
	// clock; but with Now set and Monotonic nil, Now alone is the clock (a
	// fake clock, such as the conformance suite's). docs/journal.md,
	// "Clocks", says how the two are combined and what a jump can still
	// do. The in-memory, PostgreSQL and Redis stores ignore it.
	Monotonic func() (epoch uuid.UUID, elapsed time.Duration)

	// StoreOptions, given to Open, is the options of the store the location
	// picks: a *bolt.Options for a bbolt file, a *postgres.Options for
	// PostgreSQL, a *redis.Options for Redis. Their Journal field is set
	// from these Options (see Register). Nil means the store's defaults;
	// another type is an error wrapping ErrInvalid. A store opened directly
	// ignores it.
	StoreOptions any
}
