package idempotency

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

// approvalRetryAfter is the Retry-After of a request awaiting approval.
const approvalRetryAfter = 30 * time.Second

// approvalProblem is a problem body's part on a request's approval.
type approvalProblem struct {
	Needed      int       `json:"needed"`
	Given       int       `json:"given"`
	ApprovedBy  []string  `json:"approved_by,omitempty"`
	Deadline    time.Time `json:"deadline"`
	Fingerprint string    `json:"fingerprint"`
	Approve     string    `json:"approve,omitempty"`
	RejectedBy  string    `json:"rejected_by,omitempty"`
	Reason      string    `json:"reason,omitempty"`
}

// answerApproval answers a request awaiting approval (409, not 202: it does
// not go on by itself) or refused it (422), and reports whether it did.
func (m *Middleware) answerApproval(w http.ResponseWriter, c *call, rec *journal.Record) bool {
	a := rec.Approval
	if a == nil {
		return false
	}
	p := problem{Key: c.key, JournalKey: c.jkey.String(), Approval: &approvalProblem{Needed: a.Need, Given: len(a.Given),
		Deadline: a.Deadline.UTC(), Fingerprint: rec.Fingerprint.String()}}
	for _, g := range a.Given {
		p.Approval.ApprovedBy = append(p.Approval.ApprovedBy, g.By)
	}
	switch {
	case rec.State == journal.StateAwaiting:
		p.Approval.Approve = fmt.Sprintf("agentctl approve %s --fingerprint %s", c.jkey, rec.Fingerprint)
		p.Detail = fmt.Sprintf("the request needs %d approval(s), %d given, by %s, and has not run; send it again with this key once approved (an approver runs: %s)",
			a.Need, len(a.Given), p.Approval.Deadline.Format(time.RFC3339), p.Approval.Approve)
		writeProblem(w, http.StatusConflict, ProblemAwaitingApproval, p, approvalRetryAfter)
	case rec.State == journal.StateSuppressed && rec.ErrorClass == reissue.ClassRejected:
		if res := rec.Resolution; res != nil {
			p.Approval.RejectedBy, p.Approval.Reason = res.By, res.Reason
		}
		p.Detail = "the request was not run, and will not be: " + rec.ErrorMessage
		writeProblem(w, http.StatusUnprocessableEntity, ProblemApprovalRejected, p, 0)
	case rec.State == journal.StateSuppressed && rec.ErrorClass == reissue.ClassExpired:
		p.Detail = "the request was not run, and will not be: " + rec.ErrorMessage
		writeProblem(w, http.StatusUnprocessableEntity, ProblemApprovalExpired, p, 0)
	default: // it ran once approved: answered as any record
		return false
	}
	return true
}
