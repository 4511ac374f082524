package machine

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// fingerprintsDiffer reports a mismatch; a zero fingerprint matches all.
func fingerprintsDiffer(r *journal.Record, req *journal.BeginRequest) bool {
	return !r.Fingerprint.IsZero() && !req.Fingerprint.IsZero() && r.Fingerprint != req.Fingerprint
}

// BeginDecision is what DecideBegin chose, for the store to carry out.
type BeginDecision struct {
	// Result is Begin's answer, unless the guard blocks.
	Result journal.BeginResult
	// Write, when non-nil, is the record to store under the request's key.
	Write *journal.Record
	// Guard says that Result would let the tool run: a suppressed record
	// under another key that GuardBlocks the request is answered Guarded
	// instead, and nothing is written.
	Guard bool
	// Suppress, set with a Mismatch, is the suppression that arms the
	// guard, under MismatchKey: the store writes PlaceSuppression's answer
	// for it, durably, in the same step.
	Suppress *journal.Record
	// Durable says Write must be durable whatever the request says (a
	// retaken record replaces a settled one).
	Durable bool
}

// MismatchKey is the key under which a Begin that answered Mismatch for
// key records its suppression of fingerprint fp: the UUIDv5 of fp in the
// namespace key, so a repeated mismatch finds it.
func MismatchKey(key uuid.UUID, fp keyderive.Fingerprint) uuid.UUID {
	return uuid.NewSHA1(key, fp[:])
}

// mismatchRecord is the suppression of req, with no attempt.
func mismatchRecord(req *journal.BeginRequest, now time.Time) journal.Record {
	return journal.Record{
		Version:      journal.SchemaVersion,
		Key:          MismatchKey(req.Key, req.Fingerprint),
		Intent:       req.Intent,
		Fingerprint:  req.Fingerprint,
		Effect:       req.Effect,
		Input:        req.Input,
		State:        journal.StateSuppressed,
		ErrorClass:   journal.ClassMismatch,
		ErrorMessage: fmt.Sprintf("key %s was already used with a different input; this input was suppressed, not run", req.Key),
		Lease:        journal.Lease{Owner: req.Owner, Token: 1},
		Created:      now,
		Updated:      now,
		Expires:      now.Add(recordTTL(req.RecordTTL)),
	}
}

// PlaceSuppression returns the record to write for a decision's Suppress s,
// given cur, the record under its key (nil when none): nil when cur is
// live, else s with a token above cur's.
func PlaceSuppression(cur, s *journal.Record, now time.Time) *journal.Record {
	if cur == nil {
		return s
	}
	if !journal.Expired(cur, now) {
		return nil
	}
	w := *s
	w.Lease.Token = cur.Lease.Token + 1
	return &w
}

// DecideBegin decides Begin for the current record cur of req.Key (nil
// when none) at now. It does not modify cur.
func DecideBegin(cur *journal.Record, req *journal.BeginRequest, now time.Time) BeginDecision {
	var prevToken uint64
	var step reissue.Step
	if cur != nil {
		step = reissue.Of(cur, req.Effect, now)
	}
	if step == reissue.Anew {
		// Absent for Begin; its token goes on, so a late owner is fenced.
		prevToken = cur.Lease.Token
		cur = nil
	}
	if cur == nil {
		r := newRecord(req, now, prevToken+1)
		if req.Approvals > 0 {
			return awaitApproval(r, req, now)
		}
		return BeginDecision{
			Result: journal.BeginResult{Outcome: journal.Started, Record: *r, Token: r.Lease.Token},
			Write:  r,
			Guard:  req.Guard != journal.GuardOff,
		}
	}
	retaken := false
	switch {
	case fingerprintsDiffer(cur, req):
		sup := mismatchRecord(req, now)
		return BeginDecision{Result: journal.BeginResult{Outcome: journal.Mismatch, Record: *cur}, Suppress: &sup}
	case cur.State == journal.StateAwaiting && !now.Before(cur.Approval.Deadline):
		r := cloneRecord(cur)
		settle(&r, journal.StateSuppressed, reissue.ClassExpired, fmt.Sprintf("not run by its approval deadline %s (%d of %d approvals given)",
			fmtTime(cur.Approval.Deadline), len(cur.Approval.Given), cur.Approval.Need), now)
		return BeginDecision{Result: journal.BeginResult{Outcome: journal.Answered, Record: r}, Write: &r, Durable: true}
	case cur.State == journal.StateAwaiting && len(cur.Approval.Given) < cur.Approval.Need:
		return BeginDecision{Result: journal.BeginResult{Outcome: journal.Held, Record: *cur}}
	case cur.State == journal.StateAwaiting:
		retaken = true // approved: taken over once, durably, with no attempt yet
	case cur.State.Settled():
		if !retake(cur, req) {
			return BeginDecision{Result: journal.BeginResult{Outcome: journal.Answered, Record: *cur}}
		}
		if req.Approvals > 0 && ranToAnAnswer(cur) {
			// Run again, an effect that happened needs approving again.
			d := awaitApproval(newRecord(req, now, cur.Lease.Token+1), req, now)
			d.Durable = true
			return d
		}
		retaken = true
	case step == reissue.Wait: // a live owner, or an open settle window
		return BeginDecision{Result: journal.BeginResult{Outcome: journal.Held, Record: *cur}}
	}
	// Taken over: the attempts are kept, the outcome goes.
	r := cloneRecord(cur)
	r.State = journal.StatePending
	r.Output, r.ErrorClass, r.ErrorMessage, r.Resolution = nil, "", "", nil
	r.Lease = journal.Lease{Owner: req.Owner, Token: cur.Lease.Token + 1, Expires: now.Add(LeaseTTL(req.LeaseTTL))}
	r.Updated = now
	if exp := now.Add(recordTTL(req.RecordTTL)); exp.After(r.Expires) {
		r.Expires = exp
	}
	coverLease(&r)
	return BeginDecision{
		Result:  journal.BeginResult{Outcome: journal.TakenOver, Record: r, Token: r.Lease.Token},
		Write:   &r,
		Guard:   req.Guard != journal.GuardOff,
		Durable: retaken,
	}
}

// awaitApproval turns r, the new record of req, into an intent awaiting
// approval, kept a TTL past its deadline.
func awaitApproval(r *journal.Record, req *journal.BeginRequest, now time.Time) BeginDecision {
	ttl := cmp.Or(max(req.ApprovalTTL, 0), recordTTL(req.RecordTTL))
	r.State, r.Attempts = journal.StateAwaiting, nil
	r.Lease.Expires = now
	r.Approval = &journal.Approval{Need: req.Approvals, Deadline: now.Add(ttl)}
	r.Expires = r.Approval.Deadline.Add(recordTTL(req.RecordTTL))
	return BeginDecision{Result: journal.BeginResult{Outcome: journal.Held, Record: *r}, Write: r, Guard: req.Guard != journal.GuardOff}
}

// ranToAnAnswer reports whether cur, settled, records an effect that ran
// to its answer: not an unknown outcome, nor a failure that provably ran
// nothing (not executed, released, an operator's failed verdict).
func ranToAnAnswer(cur *journal.Record) bool {
	return cur.State == journal.StateSucceeded || cur.State == journal.StateFailed &&
		cur.ErrorClass != reissue.ClassReleased && cur.Resolution == nil && !reissue.LastAttemptNotExecuted(cur)
}

// settle ends r's wait for approval in state st: no owner, a new token.
func settle(r *journal.Record, st journal.State, class, msg string, now time.Time) {
	r.State, r.ErrorClass, r.ErrorMessage = st, class, msg
	r.Lease.Token++
	r.Lease.Expires = now
	r.Updated = now
}

// retake asks req.Retake about a settled record, on a deep copy.
func retake(cur *journal.Record, req *journal.BeginRequest) bool {
	if req.Retake == nil {
		return false
	}
	c := cloneRecord(cur)
	return req.Retake(&c)
}

// cloneRecord copies r and everything it points to.
func cloneRecord(r *journal.Record) journal.Record {
	c := *r
	c.Input = bytes.Clone(r.Input)
	c.Output = bytes.Clone(r.Output)
	c.Attempts = slices.Clone(r.Attempts)
	if r.Resolution != nil {
		res := *r.Resolution
		res.Output = bytes.Clone(r.Resolution.Output)
		c.Resolution = &res
	}
	if r.Approval != nil {
		a := *r.Approval
		a.Given = slices.Clone(a.Given)
		c.Approval = &a
	}
	return c
}

// LeaseTTL is d, or journal.DefaultLeaseTTL when d is not positive.
func LeaseTTL(d time.Duration) time.Duration { return cmp.Or(max(d, 0), journal.DefaultLeaseTTL) }

func recordTTL(d time.Duration) time.Duration { return cmp.Or(max(d, 0), journal.DefaultTTL) }

// newRecord is a new record and its first attempt, in one allocation.
func newRecord(req *journal.BeginRequest, now time.Time, token uint64) *journal.Record {
	b := new(begun)
	b.rec = journal.Record{
		Version:     journal.SchemaVersion,
		Key:         req.Key,
		Intent:      req.Intent,
		Fingerprint: req.Fingerprint,
		Effect:      req.Effect,
		Input:       req.Input,
		State:       journal.StatePending,
		Lease:       journal.Lease{Owner: req.Owner, Token: token, Expires: now.Add(LeaseTTL(req.LeaseTTL))},
		Created:     now,
		Updated:     now,
		Expires:     now.Add(recordTTL(req.RecordTTL)),
	}
	b.att[0] = journal.Attempt{ID: req.AttemptID, Start: now, QuietAt: settleAt(now, req.Settle)}
	b.rec.Attempts = b.att[:1:1] // a later attempt is appended to a copy (ApplyAttempt)
	coverLease(&b.rec)
	return &b.rec
}

// begun is a new record and the array of its first attempt.
type begun struct {
	rec journal.Record
	att [1]journal.Attempt
}

// coverLease moves a record's expiry to its lease's end when the lease
// outlives it (validate checks that none does); a zero expiry stays.
func coverLease(r *journal.Record) {
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

// GuardBlocks reports whether the record s, found under another key,
// blocks req: a live suppressed record of the same tenant, session and
// tool, within req.Guard's scope (turn or session).
func GuardBlocks(s *journal.Record, req *journal.BeginRequest, now time.Time) bool {
	if s.State != journal.StateSuppressed || s.Key == req.Key || journal.Expired(s, now) {
		return false
	}
	in, g := &req.Intent, &s.Intent
	if in.Tenant != g.Tenant || in.Session != g.Session || in.Tool != g.Tool {
		return false
	}
	switch req.Guard {
	case journal.GuardTurn:
		return in.Turn == g.Turn
	case journal.GuardSession:
		return true
	}
	return false
}

// ValidateBegin checks a request before anything is read or written.
func ValidateBegin(req *journal.BeginRequest) error {
	if req.Key == uuid.Nil {
		return fmt.Errorf("%w: begin: zero key", journal.ErrInvalid)
	}
	if req.Guard > journal.GuardOff {
		return fmt.Errorf("%w: begin %s: unknown guard scope %d", journal.ErrInvalid, req.Key, req.Guard)
	}
	if req.Approvals > 0 && req.Fingerprint.IsZero() {
		return fmt.Errorf("%w: begin %s: an intent that needs approval needs a fingerprint for the approval to name", journal.ErrInvalid, req.Key)
	}
	return nil
}
