package machine

import (
	"bytes"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// Expires reports whether records in state st expire with their TTL, for
// a store that indexes state and expiry apart from the record (bbolt).
func Expires(st journal.State) bool {
	return st == journal.StateSucceeded || st == journal.StateFailed || st == journal.StateSuppressed || st == journal.StateAwaiting
}

// MatchFilter reports whether r passes f, by every field.
func MatchFilter(r *journal.Record, f *journal.Filter) bool {
	in := &r.Intent
	switch {
	case f.Tenant != "" && in.Tenant != f.Tenant,
		f.Session != "" && in.Session != f.Session,
		f.Turn != "" && in.Turn != f.Turn,
		f.Tool != "" && in.Tool != f.Tool,
		f.State != 0 && r.State != f.State,
		!f.Since.IsZero() && r.Created.Before(f.Since),
		!f.Until.IsZero() && !r.Created.Before(f.Until):
		return false
	}
	return true
}

// NewerFirst orders records by Created descending, then key.
func NewerFirst(a, b *journal.Record) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return CompareKeys(b.Key, a.Key)
}

// CompareKeys orders keys by their bytes.
func CompareKeys(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

// AddStats counts r into s.
func AddStats(s *journal.Stats, r *journal.Record, now time.Time) {
	s.Records++
	s.ByState[r.State]++
	s.ByTool[r.Intent.Tool]++
	s.Attempts += len(r.Attempts)
	if journal.Expired(r, now) {
		s.Expired++
	}
	if Overdue(r, now) {
		s.OverdueUnknown++
	}
	if s.Oldest.IsZero() || r.Created.Before(s.Oldest) {
		s.Oldest = r.Created
	}
	if r.Created.After(s.Newest) {
		s.Newest = r.Created
	}
}

// Overdue reports whether r is past its TTL but kept, its outcome unknown.
func Overdue(r *journal.Record, now time.Time) bool {
	return !r.Expires.IsZero() && !now.Before(r.Expires) && !journal.Expired(r, now)
}

// NewStats returns empty Stats for AddStats.
func NewStats() journal.Stats {
	return journal.Stats{ByState: map[journal.State]int{}, ByTool: map[string]int{}}
}

// EqualRecords reports whether two records are the same for Import.
func EqualRecords(a, b *journal.Record) bool {
	return string(codec.Encode(nil, a)) == string(codec.Encode(nil, b))
}
