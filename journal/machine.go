package journal

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// This file is the state machine: pure functions from (current record,
// request, now) to a decision, shared by every store, in this package and
// outside it (journal/postgres). A store supplies atomicity (a lock, a
// transaction), persistence and the clock; it decides nothing itself.

// Expired reports whether r is past its TTL: Begin treats it as absent and
// GC removes it. Only a settled, known outcome expires (succeeded, failed,
// suppressed). An unknown record, and a pending one (whose owner may be
// gone, leaving an unknown outcome), never expire into a re-run: they wait
// for an operator's Resolve, after which the verdict expires like any
// other. A zero Expires (a record imported from elsewhere, or written
// before the field was kept) records no TTL, and never expires: running an
// intent a second time on a guess about its age could repeat its effect.
// See Overdue and Reissue.
func Expired(r *Record, now time.Time) bool {
	return expires(r.State) && pastTTL(r, now)
}

// Overdue reports whether r is past its TTL but kept because its outcome is
// not known: an unknown or pending record that waits for an operator.
func Overdue(r *Record, now time.Time) bool {
	return !expires(r.State) && pastTTL(r, now)
}

// pastTTL reports whether r records a TTL and now is past it.
func pastTTL(r *Record, now time.Time) bool {
	return !r.Expires.IsZero() && !now.Before(r.Expires)
}

// expires reports whether records in state st expire with their TTL.
func expires(st State) bool {
	return st == StateSucceeded || st == StateFailed || st == StateSuppressed
}

// fingerprintsDiffer reports a payload mismatch. A zero fingerprint on
// either side means "not computed" and matches anything.
func fingerprintsDiffer(r *Record, req *BeginRequest) bool {
	return !r.Fingerprint.IsZero() && !req.Fingerprint.IsZero() && r.Fingerprint != req.Fingerprint
}

// BeginDecision is what DecideBegin chose for one Begin. A store carries
// it out in the atomic step in which it read the current record.
type BeginDecision struct {
	// Result is Begin's answer, unless Guard applies and the guard blocks.
	Result BeginResult
	// Write, when non-nil, is the record to store under the request's key
	// before answering Result.
	Write *Record
	// Guard says that Result would let the tool run: before writing, the
	// store must look for a suppressed record under another key that
	// GuardBlocks the request and, if it finds one, answer
	// BeginResult{Outcome: Guarded, Record: that record} and write nothing.
	Guard bool
	// Suppress, set with a Mismatch, is the suppression that arms the guard
	// for the rest of the caller's scope: a suppressed record of the
	// caller's intent and fingerprint under MismatchKey. The store writes
	// PlaceSuppression's answer for it, durably, in the same atomic step as
	// the decision, before answering.
	Suppress *Record
	// Durable says Write must be durable whatever the request says: a
	// retaken record replaces a settled one, which a store may answer from
	// its file without looking further.
	Durable bool
}

// mismatchKey is the key under which a Begin that answered Mismatch for key
// records its suppression of the caller's fingerprint fp: the UUIDv5 of fp
// in the namespace key. A repeated mismatch of the same payload derives the
// same key, and so finds the suppression it recorded.
func mismatchKey(key uuid.UUID, fp keyderive.Fingerprint) uuid.UUID {
	return uuid.NewSHA1(key, fp[:])
}

// mismatchRecord is the suppression of req, whose key holds another
// fingerprint. Nothing ran: it has no attempt.
func mismatchRecord(req *BeginRequest, now time.Time) Record {
	return Record{
		Version:      SchemaVersion,
		Key:          mismatchKey(req.Key, req.Fingerprint),
		Intent:       req.Intent,
		Fingerprint:  req.Fingerprint,
		Effect:       req.Effect,
		Input:        req.Input,
		State:        StateSuppressed,
		ErrorClass:   ClassMismatch,
		ErrorMessage: fmt.Sprintf("key %s was already used with a different input; this input was suppressed, not run", req.Key),
		Lease:        Lease{Owner: req.Owner, Token: 1},
		Created:      now,
		Updated:      now,
		Expires:      now.Add(recordTTL(req.RecordTTL)),
	}
}

// placeSuppression returns the record a store writes for a decision's
// Suppress, given the record cur it holds under Suppress's key (nil when
// none): nil when a live record already holds that key, which makes a
// repeated mismatch write nothing; else s, with a token above an expired
// record's.
func placeSuppression(cur, s *Record, now time.Time) *Record {
	if cur == nil {
		return s
	}
	if !Expired(cur, now) {
		return nil
	}
	w := *s
	w.Lease.Token = cur.Lease.Token + 1
	return &w
}

// decideBegin decides Begin for the current record cur of req.Key (nil
// when there is none) at now. It is for store implementations: the
// decision is the same in every store, and only how it is made atomic and
// durable differs. It does not modify cur, and calls req.Retake on a copy.
func decideBegin(cur *Record, req *BeginRequest, now time.Time) BeginDecision {
	var prevToken uint64
	var step Step
	if cur != nil {
		step = Reissue(cur, req.Effect, now)
	}
	if step == StepAnew {
		// An expired record is absent for Begin. Its token is carried on so
		// that a late owner of the old record is fenced.
		prevToken = cur.Lease.Token
		cur = nil
	}
	if cur == nil {
		r := newRecord(req, now, prevToken+1)
		return BeginDecision{
			Result: BeginResult{Outcome: Started, Record: *r, Token: r.Lease.Token},
			Write:  r,
			Guard:  req.Guard != GuardOff,
		}
	}
	retaken := false
	switch {
	case fingerprintsDiffer(cur, req):
		sup := mismatchRecord(req, now)
		return BeginDecision{Result: BeginResult{Outcome: Mismatch, Record: *cur}, Suppress: &sup}
	case cur.State.Settled():
		if !retake(cur, req) {
			return BeginDecision{Result: BeginResult{Outcome: Answered, Record: *cur}}
		}
		retaken = true
	case step == StepWait:
		// A pending record with a live owner, or an earlier attempt the
		// downstream may still be acting on: nobody runs or reconciles the
		// intent meanwhile.
		return BeginDecision{Result: BeginResult{Outcome: Held, Record: *cur}}
	}
	// Taken over: a pending record whose lease expired, or a settled one
	// that req.Retake asked for. The attempts are kept; the outcome goes.
	r := cloneRecord(cur)
	r.State = StatePending
	r.Output, r.ErrorClass, r.ErrorMessage, r.Resolution = nil, "", "", nil
	r.Lease = Lease{Owner: req.Owner, Token: cur.Lease.Token + 1, Expires: now.Add(leaseTTL(req.LeaseTTL))}
	r.Updated = now
	if exp := now.Add(recordTTL(req.RecordTTL)); exp.After(r.Expires) {
		r.Expires = exp
	}
	coverLease(&r)
	return BeginDecision{
		Result:  BeginResult{Outcome: TakenOver, Record: r, Token: r.Lease.Token},
		Write:   &r,
		Guard:   req.Guard != GuardOff,
		Durable: retaken,
	}
}

// retake asks req.Retake about a settled record, on a deep copy so that the
// callback cannot change the store's record or the answer.
func retake(cur *Record, req *BeginRequest) bool {
	if req.Retake == nil {
		return false
	}
	c := cloneRecord(cur)
	return req.Retake(&c)
}

// cloneRecord copies r and everything it points to.
func cloneRecord(r *Record) Record {
	c := *r
	c.Input = bytes.Clone(r.Input)
	c.Output = bytes.Clone(r.Output)
	c.Attempts = slices.Clone(r.Attempts)
	if r.Resolution != nil {
		res := *r.Resolution
		res.Output = bytes.Clone(r.Resolution.Output)
		c.Resolution = &res
	}
	return c
}

// leaseTTL is the lease a request's LeaseTTL field asks for: d, or
// DefaultLeaseTTL when d is not positive.
func leaseTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLeaseTTL
	}
	return d
}

func recordTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTTL
	}
	return d
}

// newRecord is the record a Begin starts, with its first attempt. The
// record and the attempt's array are one allocation (begun): a new
// intent's Begin is on every new call's path.
func newRecord(req *BeginRequest, now time.Time, token uint64) *Record {
	b := new(begun)
	b.rec = Record{
		Version:     SchemaVersion,
		Key:         req.Key,
		Intent:      req.Intent,
		Fingerprint: req.Fingerprint,
		Effect:      req.Effect,
		Input:       req.Input,
		State:       StatePending,
		Lease:       Lease{Owner: req.Owner, Token: token, Expires: now.Add(leaseTTL(req.LeaseTTL))},
		Created:     now,
		Updated:     now,
		Expires:     now.Add(recordTTL(req.RecordTTL)),
	}
	b.att[0] = Attempt{ID: req.AttemptID, Start: now, QuietAt: settleAt(now, req.Settle)}
	b.rec.Attempts = b.att[:1:1] // a later attempt is appended to a copy (applyAttempt)
	coverLease(&b.rec)
	return &b.rec
}

// begun is a new record and the array of its first attempt.
type begun struct {
	rec Record
	att [1]Attempt
}

// coverLease keeps a pending record at least until its lease ends: a
// lease longer than the record's TTL, or renewed past it (a tool slower
// than its TTL), moves the record's expiry with it. A pending record never
// expires (Expired); this keeps what validRecord checks, that no lease
// outlives its record, true of every record the machine writes. A record
// with no expiry (zero, from an older journal) keeps none.
func coverLease(r *Record) {
	if !r.Expires.IsZero() && r.Lease.Expires.After(r.Expires) {
		r.Expires = r.Lease.Expires
	}
}

// settleAt is the QuietAt of an attempt started at start with settle time d.
func settleAt(start time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return start.Add(d)
}

// quietAt is the latest QuietAt of r's attempts: until then an earlier
// attempt may still be acting downstream.
func quietAt(r *Record) time.Time {
	var q time.Time
	for i := range r.Attempts {
		if r.Attempts[i].QuietAt.After(q) {
			q = r.Attempts[i].QuietAt
		}
	}
	return q
}

// guardBlocks reports whether the record s, found under another key,
// blocks req: the suppression guard's rule and scope, in one place. A live
// suppressed record of the same tenant, session and tool blocks within
// req.Guard's scope (the same turn for GuardTurn, the whole session for
// GuardSession, nothing for GuardOff). DecideBegin asks for it (Guard) on
// every path that could let the tool run: a new record, a takeover, a
// retake.
func guardBlocks(s *Record, req *BeginRequest, now time.Time) bool {
	if s.State != StateSuppressed || s.Key == req.Key || Expired(s, now) {
		return false
	}
	in, g := &req.Intent, &s.Intent
	if in.Tenant != g.Tenant || in.Session != g.Session || in.Tool != g.Tool {
		return false
	}
	switch req.Guard {
	case GuardTurn:
		return in.Turn == g.Turn
	case GuardSession:
		return true
	}
	return false
}

// validateBegin checks a request before anything is read or written.
func validateBegin(req *BeginRequest) error {
	if req.Key == uuid.Nil {
		return fmt.Errorf("%w: begin: zero key", ErrInvalid)
	}
	if req.Guard > GuardOff {
		return fmt.Errorf("%w: begin %s: unknown guard scope %d", ErrInvalid, req.Key, req.Guard)
	}
	return nil
}

// fence checks that cur is pending and owned by token.
func fence(cur *Record, key uuid.UUID, token uint64) error {
	if cur.State != StatePending || cur.Lease.Token != token {
		return fmt.Errorf("%w: key %s: token %d, record is %s with token %d", ErrFenced, key, token, cur.State, cur.Lease.Token)
	}
	return nil
}

// closeAttempt ends r's open attempt, if any.
func closeAttempt(r *Record, now time.Time, class, msg string) {
	if n := len(r.Attempts); n > 0 && r.Attempts[n-1].End.IsZero() {
		a := &r.Attempts[n-1]
		a.End, a.Class, a.Error = now, class, msg
	}
}

// applyAttempt returns cur with the attempt of req started, or ErrFenced.
// It does not modify cur.
func applyAttempt(cur *Record, req *AttemptRequest, now time.Time) (Record, error) {
	if err := fence(cur, req.Key, req.Token); err != nil {
		return Record{}, err
	}
	r := *cur
	r.Attempts = make([]Attempt, len(cur.Attempts), len(cur.Attempts)+1)
	copy(r.Attempts, cur.Attempts)
	closeAttempt(&r, now, req.PrevClass, req.PrevError)
	r.Attempts = append(r.Attempts, Attempt{ID: req.ID, Start: now, QuietAt: settleAt(now, req.Settle)})
	r.Lease.Expires = now.Add(leaseTTL(req.LeaseTTL))
	r.Updated = now
	coverLease(&r)
	return r, nil
}

// validateRenew checks a renewal before anything is read.
func validateRenew(req *RenewRequest) error {
	if req.Key == uuid.Nil {
		return fmt.Errorf("%w: renew: zero key", ErrInvalid)
	}
	return nil
}

// applyRenew returns cur with its lease extended from now by req, or
// ErrFenced. An owner whose lease expired but that nobody took over may
// renew it: its token is still the record's. Renewal is not a change of
// state: Updated stays. It does not modify cur.
func applyRenew(cur *Record, req *RenewRequest, now time.Time) (Record, error) {
	if err := fence(cur, req.Key, req.Token); err != nil {
		return Record{}, err
	}
	r := *cur
	r.Lease.Expires = now.Add(leaseTTL(req.LeaseTTL))
	coverLease(&r)
	return r, nil
}

// validateCompletion checks a completion before anything is read.
func validateCompletion(c *Completion) error {
	if c.Key == uuid.Nil {
		return fmt.Errorf("%w: complete: zero key", ErrInvalid)
	}
	if !c.State.Settled() {
		return fmt.Errorf("%w: complete %s: state %s is not an outcome", ErrInvalid, c.Key, c.State)
	}
	return nil
}

// applyCompletion returns cur settled by c, or ErrFenced. It does not
// modify cur.
func applyCompletion(cur *Record, c *Completion, now time.Time) (Record, error) {
	if err := fence(cur, c.Key, c.Token); err != nil {
		return Record{}, err
	}
	r := *cur
	r.Attempts = slices.Clone(cur.Attempts)
	closeAttempt(&r, now, c.ErrorClass, c.ErrorMessage)
	r.State = c.State
	r.Output = c.Output
	r.ErrorClass, r.ErrorMessage = c.ErrorClass, c.ErrorMessage
	r.Lease.Expires = now
	r.Updated = now
	r.Expires = settledExpiry(cur, now)
	return r, nil
}

// settledExpiry is the expiry of cur settled at now. An outcome is kept
// for its TTL from the record's creation and, whatever the tool's time,
// for at least half its TTL after it is known: when less than that is
// left (a tool slower than its record's TTL, renewing its lease, or one
// settling near the end of it), the record is kept for its TTL again from
// now, so that the retries of a late outcome are answered, not run again.
// Its TTL is read as Expires - Created, which a lease that outlived the
// TTL has lengthened (coverLease): longer, never shorter. Otherwise the
// expiry stays, and a store's expiry index is not touched. A zero Expires
// (no TTL) stays zero. journal/postgres, which settles a record in its own
// statements, computes the same.
func settledExpiry(cur *Record, now time.Time) time.Time {
	if cur.Expires.IsZero() {
		return cur.Expires
	}
	ttl := cur.Expires.Sub(cur.Created)
	if cur.Expires.Sub(now) < ttl/2 {
		return now.Add(ttl)
	}
	return cur.Expires
}

// validateResolution checks an operator's verdict on key before anything
// is read.
func validateResolution(key uuid.UUID, res *Resolution) error {
	if res.State != StateSucceeded && res.State != StateFailed {
		return fmt.Errorf("%w: resolve %s: state %s (want succeeded or failed)", ErrInvalid, key, res.State)
	}
	return nil
}

// applyResolution returns cur settled by an operator, or ErrInvalid or
// ErrNotResolvable. It does not modify cur.
func applyResolution(cur *Record, res Resolution, now time.Time) (Record, error) {
	if err := validateResolution(cur.Key, &res); err != nil {
		return Record{}, err
	}
	if cur.State != StatePending && cur.State != StateUnknown {
		return Record{}, fmt.Errorf("%w: key %s is %s", ErrNotResolvable, cur.Key, cur.State)
	}
	r := *cur
	r.Attempts = slices.Clone(cur.Attempts)
	closeAttempt(&r, now, ClassResolved, res.Reason)
	res.At = now
	r.Resolution = &res
	r.State = res.State
	r.Output = nil
	r.ErrorClass, r.ErrorMessage = "", ""
	if res.State == StateSucceeded {
		r.Output = res.Output
	} else {
		r.ErrorClass, r.ErrorMessage = ClassResolved, res.Reason
	}
	// The old owner, if alive, must not overwrite the verdict.
	r.Lease.Token++
	r.Lease.Expires = now
	r.Updated = now
	// Keep the record as long again from the verdict as it was kept from
	// its creation: an operator's answer must outlive the retries it ends.
	if exp := now.Add(cur.Expires.Sub(cur.Created)); exp.After(r.Expires) {
		r.Expires = exp
	}
	return r, nil
}

// validateImport checks a record given to Import.
func validateImport(r *Record) error {
	if err := validRecord(r); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// matchFilter reports whether r passes f, by every field.
func matchFilter(r *Record, f *Filter) bool {
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

// newerFirst orders records by Created descending, then key, so that List
// is deterministic.
func newerFirst(a, b *Record) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return compareKeys(b.Key, a.Key)
}

func compareKeys(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// addStats counts r into s.
func addStats(s *Stats, r *Record, now time.Time) {
	s.Records++
	s.ByState[r.State]++
	s.ByTool[r.Intent.Tool]++
	s.Attempts += len(r.Attempts)
	if Expired(r, now) {
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

func newStats() Stats {
	return Stats{ByState: map[State]int{}, ByTool: map[string]int{}}
}

// equalRecords reports whether two records are the same for Import.
func equalRecords(a, b *Record) bool {
	return string(encodeRecord(nil, a)) == string(encodeRecord(nil, b))
}
