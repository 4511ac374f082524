package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The rules of an intent whose tool needs approval (the approval
// scenario), besides every other rule.
const (
	// RuleUnapproved: an effect's attempt began before the approvals its
	// tool needs, by distinct approvers, had all been sent (an approval
	// whose answer was lost counts as given).
	RuleUnapproved = "ran-without-approval"
	// RuleRanAfterNo: an effect's attempt began after a rejection was
	// recorded, or after a call was answered that the intent was rejected
	// or its approval deadline had passed.
	RuleRanAfterNo = "ran-after-rejection-or-expiry"
	// RuleForged: the journal accepted an approval that named the
	// fingerprint of another input.
	RuleForged = "forged-approval-accepted"
	// RuleApprovalAnswer: a call was answered awaiting approval after the
	// intent was approved, rejected or ran; or answered that it was
	// rejected with no rejection sent, or that its deadline had passed
	// before it could have, or either after it ran.
	RuleApprovalAnswer = "false-approval-answer"
)

// decisionView is one decision of the approver, from its EvDecide to its
// EvDecided.
type decisionView struct {
	do, by     string
	start, end int64
	outcome    string
}

// addDecision files an approver's event.
func (v *intentView) addDecision(e Event) {
	if e.Ev == EvDecide {
		v.decisions = append(v.decisions, &decisionView{do: e.Note, by: e.By, start: e.T, end: math.MaxInt64, outcome: DecMaybe})
		return
	}
	for _, d := range v.decisions {
		if d.do == e.Note && d.by == e.By && d.end == math.MaxInt64 {
			d.end, d.outcome = e.T, e.Outcome
			return
		}
	}
	// Not found: nothing was sent.
	v.decisions = append(v.decisions, &decisionView{do: e.Note, by: e.By, start: e.T, end: e.T, outcome: e.Outcome})
}

// approvedFrom returns the earliest moment the intent can have been
// approved (its needed approvals all sent, those that may have been
// recorded counting), and the moment by which it certainly was (each
// approval's answer said recorded); math.MaxInt64 for never.
func (v *intentView) approvedFrom(need int) (maybe, surely int64) {
	may, sure := map[string]int64{}, map[string]int64{}
	for _, d := range v.decisions {
		if d.do != DoApprove {
			continue
		}
		if d.outcome == DecAccepted || d.outcome == DecMaybe {
			if t, ok := may[d.by]; !ok || d.start < t {
				may[d.by] = d.start
			}
		}
		if d.outcome == DecAccepted {
			if t, ok := sure[d.by]; !ok || d.end < t {
				sure[d.by] = d.end
			}
		}
	}
	nth := func(m map[string]int64) int64 {
		ts := make([]int64, 0, len(m))
		for _, t := range m {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		if need < 1 || len(ts) < need {
			return math.MaxInt64
		}
		return ts[need-1]
	}
	return nth(may), nth(sure)
}

// declinedAt returns the first moment the intent was certainly rejected or
// expired: a rejection's recorded answer, or an answer to a call that
// said so; math.MaxInt64 if never.
func (v *intentView) declinedAt() int64 {
	t := int64(math.MaxInt64)
	for _, d := range v.decisions {
		if d.do == DoReject && d.outcome == DecAccepted {
			t = min(t, d.end)
		}
	}
	for _, c := range v.calls {
		if c.ans != nil && approvalRefusal(c.ans) != "" {
			t = min(t, c.end)
		}
	}
	return t
}

// approvalRefusal says what a suppressed answer says was decided about
// approval: "rejected", "expired", or "" for any other answer.
func approvalRefusal(a *Event) string {
	switch {
	case a.Outcome != OutSuppressed || !strings.Contains(a.Text, "needed approval"):
		return ""
	case strings.Contains(a.Text, "approval deadline"):
		return "expired"
	}
	return "rejected"
}

// approvalViolations applies the approval rules to an intent whose tool
// needs approval; margin is how far behind the true clock a journal clock
// that issues it may run.
func (v *intentView) approvalViolations(spec ToolSpec, margin time.Duration) []Violation {
	mayApproved, sureApproved := v.approvedFrom(spec.Approvals)
	declined := v.declinedAt()
	var unapproved, after, forged []string
	for _, e := range v.effects {
		if e.attempt.start < mayApproved {
			unapproved = append(unapproved, fmt.Sprintf("effect %d by attempt %s, begun before %d approval(s) were sent", e.ev.Effect, e.ev.Attempt, spec.Approvals))
		}
		if e.attempt.start > declined {
			after = append(after, fmt.Sprintf("effect %d by attempt %s, begun %s after the intent was rejected or expired",
				e.ev.Effect, e.ev.Attempt, time.Duration(e.attempt.start-declined).Round(time.Millisecond)))
		}
	}
	for _, d := range v.decisions {
		if d.do == DoForge && d.outcome == DecAccepted {
			forged = append(forged, fmt.Sprintf("%s's approval naming another input was recorded", d.by))
		}
	}
	var out []Violation
	for _, r := range []struct {
		rule string
		msgs []string
	}{
		{RuleUnapproved, unapproved},
		{RuleRanAfterNo, after},
		{RuleForged, forged},
		{RuleApprovalAnswer, v.falseApprovalAnswers(spec, margin, sureApproved, declined)},
	} {
		if len(r.msgs) > 0 {
			out = append(out, Violation{Rule: r.rule, Detail: strings.Join(r.msgs, "; ")})
		}
	}
	return out
}

// falseApprovalAnswers lists the calls whose answer about approval was
// not true: awaiting after the intent was approved, declined or ran; or
// rejected or expired when that cannot have been, or after it ran.
func (v *intentView) falseApprovalAnswers(spec ToolSpec, margin time.Duration, approved, declined int64) []string {
	if len(v.calls) == 0 {
		return nil
	}
	// The deadline is the record's creation, by some call, plus the TTL,
	// on a journal clock at most margin behind.
	earliestDeadline := v.calls[0].start + (time.Duration(spec.ApprovalTTLMS)*time.Millisecond - margin).Nanoseconds()
	var out []string
	for _, c := range v.calls {
		a := c.ans
		if a == nil {
			continue
		}
		ran := v.effectBefore(c)
		changed := min(approved, declined)
		if ran != nil {
			changed = min(changed, ran.attempt.start)
		}
		switch why := approvalRefusal(a); {
		case a.Outcome == OutAwaiting && c.start > changed && !v.joinable(c, changed):
			out = append(out, fmt.Sprintf("%s answered awaiting approval, begun %s after the intent was approved, declined or ran",
				c.id, time.Duration(c.start-changed).Round(time.Millisecond)))
		case why != "" && ran != nil:
			out = append(out, fmt.Sprintf("%s answered %s, but effect %d by attempt %s happened", c.id, why, ran.ev.Effect, ran.ev.Attempt))
		case why == "rejected" && !v.rejectionSentBefore(c.end):
			out = append(out, fmt.Sprintf("%s answered rejected, but no rejection was recorded before", c.id))
		case why == "expired" && c.end < earliestDeadline:
			out = append(out, fmt.Sprintf("%s answered expired %s before the deadline could have passed", c.id,
				time.Duration(earliestDeadline-c.end).Round(time.Millisecond)))
		}
	}
	return out
}

// joinable reports whether call c may have joined the flight of another
// call of its payload, in its process, made before t and still open when
// c began: the harness answers the calls of one flight with one answer,
// read when the flight began.
func (v *intentView) joinable(c *callView, t int64) bool {
	return slices.ContainsFunc(v.calls, func(o *callView) bool {
		return o != c && o.proc == c.proc && o.p == c.p && o.start < t && o.end >= c.start
	})
}

// rejectionSentBefore reports whether a rejection that may have been
// recorded was sent before t.
func (v *intentView) rejectionSentBefore(t int64) bool {
	return slices.ContainsFunc(v.decisions, func(d *decisionView) bool {
		return d.do == DoReject && d.start < t && (d.outcome == DecAccepted || d.outcome == DecMaybe)
	})
}

// skewMargin is how far behind the true clock a worker's journal clock
// may run (the plan's skews, but the one far ahead).
func skewMargin(p *Plan) time.Duration {
	m := 0
	for _, s := range p.Skews {
		m = max(m, -s)
	}
	return time.Duration(m) * time.Millisecond
}
