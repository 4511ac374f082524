package journal

import "time"

// Expired reports whether r is past its TTL: Begin treats it as absent and
// GC removes it. Only a settled, known outcome expires (succeeded, failed,
// suppressed). An unknown record, and a pending one (whose owner may be
// gone, leaving an unknown outcome), never expire into a re-run: they wait
// for an operator's Resolve, after which the verdict expires like any
// other. A record awaiting approval expires too: nothing ran. A zero
// Expires (a record imported from elsewhere, or written before the field
// was kept) records no TTL, and never expires: running an intent a second
// time on a guess about its age could repeat its effect.
// See package reissue.
func Expired(r *Record, now time.Time) bool {
	return expires(r.State) && pastTTL(r, now)
}

// pastTTL reports whether r records a TTL and now is past it.
func pastTTL(r *Record, now time.Time) bool {
	return !r.Expires.IsZero() && !now.Before(r.Expires)
}

// expires reports whether records in state st expire with their TTL.
func expires(st State) bool {
	return st == StateSucceeded || st == StateFailed || st == StateSuppressed || st == StateAwaiting
}
