package journal

import (
	"time"

	"github.com/google/uuid"
)

// Options configures a store: what every store shares. A nil *Options
// means defaults; each field's zero value is its default. A store's own
// settings are in its package's Options (journal/bolt's, journal/postgres's),
// which hold these as their Journal field; through Open they travel in
// StoreOptions.
type Options struct {
	// Namespace is the secret UUIDv5 namespace for a new journal. Zero
	// means: keep the one stored in the journal, or generate one at random
	// when the journal is created. A non-zero value that differs from the
	// stored one is an error (keys would silently change).
	Namespace uuid.UUID

	// ReadOnly opens the journal for inspection: every write returns
	// ErrReadOnly and the journal is never modified.
	ReadOnly bool

	// Now is the store's clock, by which it judges leases, settle windows
	// and TTLs: a test seam. Nil means time.Now. The bbolt and in-memory
	// stores use it; the PostgreSQL store ignores it (the database server's
	// clock decides; postgres.Options.TestClock stands in for that one).
	Now func() time.Time

	// StoreOptions, given to Open, is the options of the store the location
	// picks: a *bolt.Options for a bbolt file, a *postgres.Options for
	// PostgreSQL. Their Journal field is ignored (these Options are used).
	// Nil means the store's defaults; another type is an error wrapping
	// ErrInvalid. A store opened directly ignores it.
	StoreOptions any
}
