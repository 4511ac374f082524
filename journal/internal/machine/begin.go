package machine

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// This file is Begin's decision and the suppression guard.

// fingerprintsDiffer reports a payload mismatch. A zero fingerprint on
// either side means "not computed" and matches anything.
func fingerprintsDiffer(r *journal.Record, req *journal.BeginRequest) bool {
	return !r.Fingerprint.IsZero() && !req.Fingerprint.IsZero() && r.Fingerprint != req.Fingerprint
}

// BeginDecision is what DecideBegin chose for one Begin. A store carries
// it out in the atomic step in which it read the current record.
type BeginDecision struct {
	// Result is Begin's answer, unless Guard applies and the guard blocks.
	Result journal.BeginResult
	// Write, when non-nil, is the record to store under the request's key
	// before answering Result.
	Write *journal.Record
	// Guard says that Result would let the tool run: before writing, the
	// store must look for a suppressed record under another key that
	// GuardBlocks the request and, if it finds one, answer
	// journal.BeginResult{Outcome: journal.Guarded, Record: that record} and write nothing.
	Guard bool
	// Suppress, set with a journal.Mismatch, is the suppression that arms the guard
	// for the rest of the caller's scope: a suppressed record of the
	// caller's intent and fingerprint under MismatchKey. The store writes
	// PlaceSuppression's answer for it, durably, in the same atomic step as
	// the decision, before answering.
	Suppress *journal.Record
	// Durable says Write must be durable whatever the request says: a
	// retaken record replaces a settled one, which a store may answer from
	// its file without looking further.
	Durable bool
}

// MismatchKey is the key under which a Begin that answered journal.Mismatch for key
// records its suppression of the caller's fingerprint fp: the UUIDv5 of fp
// in the namespace key. A repeated mismatch of the same payload derives the
// same key, and so finds the suppression it recorded.
func MismatchKey(key uuid.UUID, fp keyderive.Fingerprint) uuid.UUID {
	return uuid.NewSHA1(key, fp[:])
}

// mismatchRecord is the suppression of req, whose key holds another
// fingerprint. Nothing ran: it has no attempt.
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

// PlaceSuppression returns the record a store writes for a decision's
// Suppress, given the record cur it holds under Suppress's key (nil when
// none): nil when a live record already holds that key, which makes a
// repeated mismatch write nothing; else s, with a token above an expired
// record's.
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
// when there is none) at now. It is for store implementations: the
// decision is the same in every store, and only how it is made atomic and
// durable differs. It does not modify cur, and calls req.Retake on a copy.
func DecideBegin(cur *journal.Record, req *journal.BeginRequest, now time.Time) BeginDecision {
	var prevToken uint64
	var step reissue.Step
	if cur != nil {
		step = reissue.Of(cur, req.Effect, now)
	}
	if step == reissue.Anew {
		// An expired record is absent for Begin. Its token is carried on so
		// that a late owner of the old record is fenced.
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
		retaken = true
	case step == reissue.Wait:
		// A pending record with a live owner, or an earlier attempt the
		// downstream may still be acting on: nobody runs or reconciles the
		// intent meanwhile.
		return BeginDecision{Result: journal.BeginResult{Outcome: journal.Held, Record: *cur}}
	}
	// Taken over: a pending record whose lease expired, or a settled one
	// that req.Retake asked for. The attempts are kept; the outcome goes.
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
// req.Approvals approvers: nothing runs, and Begin answers Held. It is
// kept a TTL past its deadline, so that a call after the deadline is
// answered that it expired rather than asking anew.
func awaitApproval(r *journal.Record, req *journal.BeginRequest, now time.Time) BeginDecision {
	ttl := req.ApprovalTTL
	if ttl <= 0 {
		ttl = recordTTL(req.RecordTTL)
	}
	r.State, r.Attempts = journal.StateAwaiting, nil
	r.Lease.Expires = now
	r.Approval = &journal.Approval{Need: req.Approvals, Deadline: now.Add(ttl)}
	r.Expires = r.Approval.Deadline.Add(recordTTL(req.RecordTTL))
	return BeginDecision{Result: journal.BeginResult{Outcome: journal.Held, Record: *r}, Write: r, Guard: req.Guard != journal.GuardOff}
}

// settle ends r's wait for approval in state st: no owner, a new token.
func settle(r *journal.Record, st journal.State, class, msg string, now time.Time) {
	r.State, r.ErrorClass, r.ErrorMessage = st, class, msg
	r.Lease.Token++
	r.Lease.Expires = now
	r.Updated = now
}

// retake asks req.Retake about a settled record, on a deep copy so that the
// callback cannot change the store's record or the answer.
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

// LeaseTTL is the lease a request's LeaseTTL field asks for: d, or
// journal.DefaultLeaseTTL when d is not positive.
func LeaseTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return journal.DefaultLeaseTTL
	}
	return d
}

func recordTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return journal.DefaultTTL
	}
	return d
}

// newRecord is the record a Begin starts, with its first attempt. The
// record and the attempt's array are one allocation (begun): a new
// intent's Begin is on every new call's path.
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

// coverLease keeps a pending record at least until its lease ends: a
// lease longer than the record's TTL, or renewed past it (a tool slower
// than its TTL), moves the record's expiry with it. A pending record never
// expires (journal.Expired); this keeps what validate checks, that no lease
// outlives its record, true of every record the machine writes. A record
// with no expiry (zero, from an older journal) keeps none.
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
// blocks req: the suppression guard's rule and scope, in one place. A live
// suppressed record of the same tenant, session and tool blocks within
// req.Guard's scope (the same turn for journal.GuardTurn, the whole session for
// journal.GuardSession, nothing for journal.GuardOff). DecideBegin asks for it (Guard) on
// every path that could let the tool run: a new record, a takeover, a
// retake.
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
