package journal

import "time"

// Expired reports whether r is past its TTL: Begin treats it as absent and
// GC removes it. Only a known outcome (succeeded, failed, suppressed) or a
// record awaiting approval expires; an unknown or pending one never
// expires into a re-run, and neither does one with a zero Expires.
func Expired(r *Record, now time.Time) bool {
	switch r.State {
	case StateSucceeded, StateFailed, StateSuppressed, StateAwaiting:
		return !r.Expires.IsZero() && !now.Before(r.Expires)
	}
	return false
}
