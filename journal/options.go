package journal

import (
	"time"

	"github.com/google/uuid"
)

// Options configures a store: what every store shares. A nil *Options
// means defaults; each field's zero value is its default. A store's own
// Options hold these as their Journal field.
type Options struct {
	// Namespace is the secret UUIDv5 namespace for a new journal. Zero
	// keeps the stored one, or makes a random one for a new journal; one
	// that differs from the stored one is an error.
	Namespace uuid.UUID

	// ReadOnly opens the journal for inspection: every write returns
	// ErrReadOnly.
	ReadOnly bool

	// Now is the wall clock, a test seam: nil means time.Now. Alone (with
	// Monotonic nil) it is the store's clock for leases, settle windows and
	// TTLs. The PostgreSQL store ignores it.
	Now func() time.Time

	// Monotonic, a test seam, is the clock by which the bbolt store
	// measures elapsed time, so that a jump of Now moves none of its
	// judgments: the clock's epoch and the time since it. Nil means the
	// host's (CLOCK_BOOTTIME on Linux), unless Now is set. docs/journal.md,
	// "Clocks", has the details. Other stores ignore it.
	Monotonic func() (epoch uuid.UUID, elapsed time.Duration)

	// StoreOptions, given to Open, is the options of the store the location
	// picks (*bolt.Options, *postgres.Options, *redis.Options); nil means
	// its defaults, another type is an error wrapping ErrInvalid.
	StoreOptions any
}
