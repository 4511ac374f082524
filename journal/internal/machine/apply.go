package machine

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

// fence checks that cur is pending and owned by token.
func fence(cur *journal.Record, key uuid.UUID, token uint64) error {
	if cur.State != journal.StatePending || cur.Lease.Token != token {
		return fmt.Errorf("%w: key %s: token %d, record is %s with token %d", journal.ErrFenced, key, token, cur.State, cur.Lease.Token)
	}
	return nil
}

// closeAttempt ends r's open attempt, if any.
func closeAttempt(r *journal.Record, now time.Time, class, msg string) {
	if n := len(r.Attempts); n > 0 && r.Attempts[n-1].End.IsZero() {
		a := &r.Attempts[n-1]
		a.End, a.Class, a.Error = now, class, msg
	}
}

// ApplyAttempt returns cur with req's attempt started, or ErrFenced.
func ApplyAttempt(cur *journal.Record, req *journal.AttemptRequest, now time.Time) (journal.Record, error) {
	if err := fence(cur, req.Key, req.Token); err != nil {
		return journal.Record{}, err
	}
	r := *cur
	r.Attempts = make([]journal.Attempt, len(cur.Attempts), len(cur.Attempts)+1)
	copy(r.Attempts, cur.Attempts)
	closeAttempt(&r, now, req.PrevClass, req.PrevError)
	r.Attempts = append(r.Attempts, journal.Attempt{ID: req.ID, Start: now, QuietAt: settleAt(now, req.Settle)})
	r.Lease.Expires = now.Add(LeaseTTL(req.LeaseTTL))
	r.Updated = now
	coverLease(&r)
	return r, nil
}

// ValidateRenew checks a renewal before anything is read.
func ValidateRenew(req *journal.RenewRequest) error {
	if req.Key == uuid.Nil {
		return fmt.Errorf("%w: renew: zero key", journal.ErrInvalid)
	}
	return nil
}

// ApplyRenew returns cur with its lease extended from now by req, or
// ErrFenced; an expired lease nobody took over may be renewed. Updated
// stays.
func ApplyRenew(cur *journal.Record, req *journal.RenewRequest, now time.Time) (journal.Record, error) {
	if err := fence(cur, req.Key, req.Token); err != nil {
		return journal.Record{}, err
	}
	r := *cur
	r.Lease.Expires = now.Add(LeaseTTL(req.LeaseTTL))
	coverLease(&r)
	return r, nil
}

// ValidateCompletion checks a completion before anything is read.
func ValidateCompletion(c *journal.Completion) error {
	if c.Key == uuid.Nil {
		return fmt.Errorf("%w: complete: zero key", journal.ErrInvalid)
	}
	if !c.State.Settled() {
		return fmt.Errorf("%w: complete %s: state %s is not an outcome", journal.ErrInvalid, c.Key, c.State)
	}
	return nil
}

// ApplyCompletion returns cur settled by c, or ErrFenced.
func ApplyCompletion(cur *journal.Record, c *journal.Completion, now time.Time) (journal.Record, error) {
	if err := fence(cur, c.Key, c.Token); err != nil {
		return journal.Record{}, err
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

// settledExpiry is the expiry of cur settled at now: when less than half
// its TTL (Expires - Created) is left, a TTL from now, so that the retries
// of a late outcome are answered; else unchanged. journal/postgres
// computes the same in SQL.
func settledExpiry(cur *journal.Record, now time.Time) time.Time {
	if cur.Expires.IsZero() {
		return cur.Expires
	}
	ttl := cur.Expires.Sub(cur.Created)
	if cur.Expires.Sub(now) < ttl/2 {
		return now.Add(ttl)
	}
	return cur.Expires
}

// ValidateResolution checks a verdict or an approver's decision on key.
func ValidateResolution(key uuid.UUID, res *journal.Resolution) error {
	switch {
	case res.State < journal.StatePending || res.State > journal.StateSuppressed:
		return fmt.Errorf("%w: resolve %s: state %s (want succeeded or failed to settle, pending to approve, suppressed to reject)", journal.ErrInvalid, key, res.State)
	case (res.State == journal.StatePending || res.State == journal.StateSuppressed) && res.By == "":
		return fmt.Errorf("%w: resolve %s: an approval or a rejection names who decides (By)", journal.ErrInvalid, key)
	case res.State == journal.StatePending && res.Fingerprint.IsZero():
		return fmt.Errorf("%w: resolve %s: an approval names the fingerprint of the input it approves", journal.ErrInvalid, key)
	}
	return nil
}

// ApplyResolution returns cur settled by an operator, or why it cannot be.
func ApplyResolution(cur *journal.Record, res journal.Resolution, now time.Time) (journal.Record, error) {
	if err := ValidateResolution(cur.Key, &res); err != nil {
		return journal.Record{}, err
	}
	switch {
	case cur.State == journal.StateAwaiting:
		return applyDecision(cur, res, now)
	case res.State == journal.StatePending || res.State == journal.StateSuppressed:
		return journal.Record{}, fmt.Errorf("%w: key %s is %s, not awaiting approval", journal.ErrNotResolvable, cur.Key, cur.State)
	case cur.State != journal.StatePending && cur.State != journal.StateUnknown:
		return journal.Record{}, fmt.Errorf("%w: key %s is %s", journal.ErrNotResolvable, cur.Key, cur.State)
	}
	r := *cur
	r.Attempts = slices.Clone(cur.Attempts)
	closeAttempt(&r, now, journal.ClassResolved, res.Reason)
	res.At = now
	r.Resolution = &res
	r.State = res.State
	r.Output = nil
	r.ErrorClass, r.ErrorMessage = "", ""
	if res.State == journal.StateSucceeded {
		r.Output = res.Output
	} else {
		r.ErrorClass, r.ErrorMessage = journal.ClassResolved, res.Reason
	}
	r.Lease.Token++ // fences the old owner
	r.Lease.Expires = now
	r.Updated = now
	// Kept its TTL again from the verdict, to outlive the retries it ends.
	if exp := now.Add(cur.Expires.Sub(cur.Created)); exp.After(r.Expires) {
		r.Expires = exp
	}
	return r, nil
}

// applyDecision returns cur, awaiting approval, approved once more or
// rejected by res; ErrNotResolvable past its deadline, once approved, or
// for a verdict; ErrInvalid for an approval of another input or a second
// one by the same approver.
func applyDecision(cur *journal.Record, res journal.Resolution, now time.Time) (journal.Record, error) {
	a := cur.Approval
	switch {
	case res.State == journal.StateSucceeded || res.State == journal.StateFailed:
		return journal.Record{}, fmt.Errorf("%w: key %s awaits approval and nothing ran: approve or reject it", journal.ErrNotResolvable, cur.Key)
	case !now.Before(a.Deadline):
		return journal.Record{}, fmt.Errorf("%w: key %s: its approval deadline %s has passed", journal.ErrNotResolvable, cur.Key, fmtTime(a.Deadline))
	case len(a.Given) >= a.Need:
		return journal.Record{}, fmt.Errorf("%w: key %s is already approved (%d of %d)", journal.ErrNotResolvable, cur.Key, len(a.Given), a.Need)
	case res.State == journal.StatePending && res.Fingerprint != cur.Fingerprint:
		return journal.Record{}, fmt.Errorf("%w: approval of key %s names input %s, but the intent's input is %s: an approval runs only the input it names",
			journal.ErrInvalid, cur.Key, res.Fingerprint, cur.Fingerprint)
	case res.State == journal.StatePending && slices.ContainsFunc(a.Given, func(g journal.Resolution) bool { return g.By == res.By }):
		return journal.Record{}, fmt.Errorf("%w: key %s is already approved by %q; it needs %d distinct approvers", journal.ErrInvalid, cur.Key, res.By, a.Need)
	}
	r := cloneRecord(cur)
	res.At, res.Output = now, nil
	if res.State == journal.StatePending {
		r.Approval.Given = append(r.Approval.Given, res)
		r.Updated = now
		return r, nil
	}
	r.Resolution = &res
	settle(&r, journal.StateSuppressed, reissue.ClassRejected, fmt.Sprintf("rejected by %s: %s", res.By, res.Reason), now)
	return r, nil
}

// ValidateImport checks a record given to Import.
func ValidateImport(r *journal.Record) error {
	if err := validate(r); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}
