package journal

import (
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// StoreKit is what only a Store implementation needs: the steps of the one
// state machine every store calls (Validate* before anything is read,
// DecideBegin and Apply* on the record read, under the store's own lock or
// transaction), the record's binary form, and the helpers that make every
// store's List and Stats agree. A user of a Store needs none of it. Its
// methods are called through the zero value, [Kit]:
//
//	d := journal.Kit.DecideBegin(cur, &req, now)
//
// They are grouped under one type, rather than spread among the package's
// functions or put in a package of their own, because the in-memory store
// and the state machine live here and a subpackage would import journal:
// this keeps them visibly apart in go doc without an import cycle.
type StoreKit struct{}

// Kit is the StoreKit that store implementations call.
var Kit StoreKit

// DecideBegin decides Begin for the current record cur of req.Key (nil
// when there is none) at now: the whole state machine of Begin, the same in
// every store; only how a store makes it atomic and durable differs. It
// does not modify cur, and calls req.Retake on a copy.
func (StoreKit) DecideBegin(cur *Record, req *BeginRequest, now time.Time) BeginDecision {
	return decideBegin(cur, req, now)
}

// PlaceSuppression returns the record a store writes for a decision's
// Suppress s, given the record cur it holds under s.Key (nil when none):
// nil when a live record already holds that key (a repeated mismatch
// writes nothing), else s with a token above an expired record's.
func (StoreKit) PlaceSuppression(cur, s *Record, now time.Time) *Record {
	return placeSuppression(cur, s, now)
}

// MismatchKey is the key under which a Begin that answered Mismatch for key
// records the caller's intent, with fingerprint fp, as suppressed.
func (StoreKit) MismatchKey(key uuid.UUID, fp keyderive.Fingerprint) uuid.UUID {
	return mismatchKey(key, fp)
}

// LeaseTTL is the lease a request's LeaseTTL field asks for: d, or
// DefaultLeaseTTL when d is not positive.
func (StoreKit) LeaseTTL(d time.Duration) time.Duration { return leaseTTL(d) }

// GuardBlocks reports whether the record s, found under another key,
// blocks req at now: the suppression guard's rule and scope. A live
// suppressed record of the same tenant, session and tool blocks within
// req.Guard's scope.
func (StoreKit) GuardBlocks(s *Record, req *BeginRequest, now time.Time) bool {
	return guardBlocks(s, req, now)
}

// ValidateBegin checks a request before anything is read or written.
func (StoreKit) ValidateBegin(req *BeginRequest) error { return validateBegin(req) }

// ApplyAttempt returns cur with the attempt of req started, or ErrFenced.
func (StoreKit) ApplyAttempt(cur *Record, req *AttemptRequest, now time.Time) (Record, error) {
	return applyAttempt(cur, req, now)
}

// ValidateRenew checks a renewal before anything is read.
func (StoreKit) ValidateRenew(req *RenewRequest) error { return validateRenew(req) }

// ApplyRenew returns cur with its lease extended from now by req, or
// ErrFenced.
func (StoreKit) ApplyRenew(cur *Record, req *RenewRequest, now time.Time) (Record, error) {
	return applyRenew(cur, req, now)
}

// ValidateCompletion checks a completion before anything is read.
func (StoreKit) ValidateCompletion(c *Completion) error { return validateCompletion(c) }

// ApplyCompletion returns cur settled by c, or ErrFenced.
func (StoreKit) ApplyCompletion(cur *Record, c *Completion, now time.Time) (Record, error) {
	return applyCompletion(cur, c, now)
}

// ValidateResolution checks an operator's verdict on key before anything
// is read.
func (StoreKit) ValidateResolution(key uuid.UUID, res *Resolution) error {
	return validateResolution(key, res)
}

// ApplyResolution returns cur settled by an operator, or ErrInvalid or
// ErrNotFound.
func (StoreKit) ApplyResolution(cur *Record, res Resolution, now time.Time) (Record, error) {
	return applyResolution(cur, res, now)
}

// ValidateImport checks a record given to Import.
func (StoreKit) ValidateImport(r *Record) error { return validateImport(r) }

// Expires reports whether a record in state st expires past its TTL
// (succeeded, failed, suppressed); unknown and pending never do.
func (StoreKit) Expires(st State) bool { return expires(st) }

// MatchFilter reports whether r passes f, by every field.
func (StoreKit) MatchFilter(r *Record, f *Filter) bool { return matchFilter(r, f) }

// NewerFirst orders records as List returns them: by Created descending,
// then by key.
func (StoreKit) NewerFirst(a, b *Record) int { return newerFirst(a, b) }

// CompareKeys orders keys bytewise.
func (StoreKit) CompareKeys(a, b uuid.UUID) int { return compareKeys(a, b) }

// NewStats returns empty Stats with their maps made.
func (StoreKit) NewStats() Stats { return newStats() }

// AddStats counts r into s as of now.
func (StoreKit) AddStats(s *Stats, r *Record, now time.Time) { addStats(s, r, now) }

// EqualRecords reports whether two records are the same, for Import.
func (StoreKit) EqualRecords(a, b *Record) bool { return equalRecords(a, b) }

// EncodeRecord appends the binary form of r to dst, sealed with its
// checksum: the form the bbolt file stores.
func (StoreKit) EncodeRecord(dst []byte, r *Record) []byte { return encodeRecord(dst, r) }

// DecodeRecord decodes a record's binary form, checking its checksum: an
// error wrapping ErrCorrupt, or ErrNewerVersion, says what is wrong. It
// does not name the key or the file; the caller adds them.
func (StoreKit) DecodeRecord(val []byte) (Record, error) { return decodeRecord(val) }
