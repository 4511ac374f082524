package machine

import (
	"fmt"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/google/uuid"
)

// maxToken bounds a fencing token, far from wrapping to an old one.
const maxToken = 1 << 62

// validate reports why r is a record the state machine could not have
// produced (an error wrapping ErrInvalid, or ErrNewerVersion), or nil:
// Import refuses such a record, so that a damaged export never becomes an
// answer or a lease.
func validate(r *journal.Record) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: record %s: %s", journal.ErrInvalid, r.Key, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Key == uuid.Nil:
		return fmt.Errorf("%w: zero key", journal.ErrInvalid)
	case r.Version > journal.SchemaVersion:
		return fmt.Errorf("%w: record %s: version %d, this package writes %d", journal.ErrNewerVersion, r.Key, r.Version, journal.SchemaVersion)
	case r.State < journal.StatePending || r.State > journal.StateAwaiting:
		return bad("state %s", r.State)
	case r.Effect > journal.Keyed:
		return bad("effect kind %d", r.Effect)
	case r.Created.IsZero() || r.Updated.IsZero() || r.Expires.IsZero():
		return bad("created, updated and expires must all be set (created %s, updated %s, expires %s)",
			fmtTime(r.Created), fmtTime(r.Updated), fmtTime(r.Expires))
	case r.Updated.Before(r.Created):
		return bad("updated %s before created %s", fmtTime(r.Updated), fmtTime(r.Created))
	case !r.Expires.After(r.Created):
		return bad("expires %s not after created %s", fmtTime(r.Expires), fmtTime(r.Created))
	case r.Lease.Token == 0 || r.Lease.Token >= maxToken:
		return bad("fencing token %d (want 1 to %d)", r.Lease.Token, uint64(maxToken-1))
	case r.State == journal.StatePending && (r.Output != nil || r.Resolution != nil || r.ErrorClass != ""):
		return bad("pending with an outcome (output, error class or resolution)")
	case r.State == journal.StatePending && r.Lease.Expires.After(r.Expires):
		return bad("lease until %s outlives the record (expires %s)", fmtTime(r.Lease.Expires), fmtTime(r.Expires))
	case r.State != journal.StatePending && r.Lease.Expires.After(r.Updated):
		return bad("%s with a lease until %s after its last change %s", r.State, fmtTime(r.Lease.Expires), fmtTime(r.Updated))
	case r.State != journal.StateSucceeded && r.Output != nil:
		return bad("%s with an output", r.State)
	case r.State == journal.StateAwaiting && (r.Approval == nil || len(r.Attempts) > 0 || r.ErrorClass != "" || r.Resolution != nil):
		return bad("awaiting approval with an attempt, an outcome or no approval")
	}
	if err := validResolution(r); err != nil {
		return bad("%v", err)
	}
	if err := validApproval(r); err != nil {
		return bad("%v", err)
	}
	return validAttempts(r, bad)
}

// validResolution checks an operator's verdict against the record.
func validResolution(r *journal.Record) error {
	res := r.Resolution
	switch {
	case res == nil:
		return nil
	case r.State != journal.StateSucceeded && r.State != journal.StateFailed &&
		(r.State != journal.StateSuppressed || r.ErrorClass != reissue.ClassRejected):
		return fmt.Errorf("a resolution on a %s record", r.State)
	case res.State != r.State:
		return fmt.Errorf("resolved as %s but %s", res.State, r.State)
	case res.At.IsZero() || res.At.Before(r.Created) || res.At.After(r.Updated):
		return fmt.Errorf("resolved at %s, outside created %s to updated %s", fmtTime(res.At), fmtTime(r.Created), fmtTime(r.Updated))
	}
	return nil
}

// validApproval checks what an intent that needed approval was given.
func validApproval(r *journal.Record) error {
	a := r.Approval
	if a == nil {
		return nil
	}
	if a.Need <= 0 || len(a.Given) > a.Need || a.Deadline.Before(r.Created) {
		return fmt.Errorf("approval needing %d with %d given, deadline %s", a.Need, len(a.Given), fmtTime(a.Deadline))
	}
	for i, g := range a.Given {
		switch {
		case g.State != journal.StatePending || g.By == "" || g.Fingerprint != r.Fingerprint:
			return fmt.Errorf("approval %d is not an approval of this input by someone", i+1)
		case g.At.Before(r.Created) || g.At.After(r.Updated) || g.At.After(a.Deadline):
			return fmt.Errorf("approval %d at %s, outside created %s to updated %s or past its deadline", i+1, fmtTime(g.At), fmtTime(r.Created), fmtTime(r.Updated))
		}
	}
	return nil
}

// validAttempts checks the attempts' times and order.
func validAttempts(r *journal.Record, bad func(string, ...any) error) error {
	if len(r.Attempts) == 0 {
		if r.State == journal.StateSuppressed && r.ErrorClass == journal.ClassMismatch || r.Approval != nil {
			return nil
		}
		return bad("%s with no attempt", r.State)
	}
	for i := range r.Attempts {
		a := &r.Attempts[i]
		n := i + 1
		switch {
		case a.Start.IsZero():
			return bad("attempt %d has no start", n)
		case a.Start.Before(r.Created):
			return bad("attempt %d starts %s, before the record was created %s", n, fmtTime(a.Start), fmtTime(r.Created))
		case a.Start.After(r.Updated):
			return bad("attempt %d starts %s, after the record's last change %s", n, fmtTime(a.Start), fmtTime(r.Updated))
		case i > 0 && a.Start.Before(r.Attempts[i-1].Start):
			return bad("attempt %d starts before attempt %d", n, i)
		case !a.End.IsZero() && a.End.Before(a.Start):
			return bad("attempt %d ends %s, before it starts %s", n, fmtTime(a.End), fmtTime(a.Start))
		case !a.End.IsZero() && a.End.After(r.Updated):
			return bad("attempt %d ends %s, after the record's last change %s", n, fmtTime(a.End), fmtTime(r.Updated))
		case !a.QuietAt.IsZero() && a.QuietAt.Before(a.Start):
			return bad("attempt %d is quiet at %s, before it starts %s", n, fmtTime(a.QuietAt), fmtTime(a.Start))
		case a.End.IsZero() && (r.State != journal.StatePending || n != len(r.Attempts)):
			return bad("attempt %d is still open in a %s record", n, r.State)
		}
	}
	return nil
}

// fmtTime writes a time for an error message.
func fmtTime(t time.Time) string {
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}
