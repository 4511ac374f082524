package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// timeline is what "agentctl timeline" draws, computed once from the
// records; the text, HTML and JSON outputs only render it. Its JSON form is
// the --json output.
type timeline struct {
	Session string    `json:"session"`
	Tenant  string    `json:"tenant"`
	At      time.Time `json:"at"`
	// From and To bound the axis: the first attempt's start and the last
	// thing drawn (an attempt's end, a mark, or now for a running one).
	From    time.Time        `json:"from"`
	To      time.Time        `json:"to"`
	Intents []timelineIntent `json:"intents"`
	// Gaps are the idle stretches cut out of the axis.
	Gaps []timelineGap `json:"gaps"`
	// Summary counts the intents by status.
	Summary map[string]int `json:"summary"`

	axis *timeAxis
}

// timelineIntent is one row.
type timelineIntent struct {
	Key    string `json:"key"`
	Tenant string `json:"tenant"`
	Turn   string `json:"turn"`
	Tool   string `json:"tool"`
	Effect string `json:"effect"`
	State  string `json:"state"`
	// Status is what the model was told, in the harness's words
	// (succeeded, failed, suppressed, unknown, in-progress).
	Status   string            `json:"status"`
	Created  time.Time         `json:"created"`
	Updated  time.Time         `json:"updated"`
	Attempts []timelineAttempt `json:"attempts"`
	Marks    []timelineMark    `json:"marks"`
	// ForModel is the text a call answered from this record hands the
	// model (harness.Result.ForModel of the replayed result).
	ForModel string `json:"for_model"`
	// Reissue and ReissueReason are what a re-issued call would do now,
	// as agentctl replay says it (answer, retry, wait, block, anew).
	Reissue       string `json:"reissue"`
	ReissueReason string `json:"reissue_reason"`
	// Attention is "unknown" (the outcome is unknown), "blocked" (a
	// re-issue would block) or empty: the rows an operator must look at.
	Attention string `json:"attention"`
}

// timelineAttempt is one bar.
type timelineAttempt struct {
	ID    string     `json:"id"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end"`
	// Class is the attempt's retry class; for an attempt without an end,
	// "running" while its owner's lease is live, else "stopped" (its
	// owner died during it: it may have executed).
	Class string `json:"class"`
	Error string `json:"error"`

	// drawEnd is where the bar ends on the axis: End, or now for a
	// running attempt, or the lease's expiry for a stopped one.
	drawEnd time.Time
}

// Mark kinds.
const (
	markWait     = "wait"     // waited on a key in flight downstream (after a 409)
	markRetry    = "retry"    // the next attempt started (after a backoff)
	markSuppress = "suppress" // the intent was suppressed
	markResolve  = "resolve"  // an operator settled it
	markApprove  = "approve"  // an approver approved it
	markReject   = "reject"   // an approver rejected it
)

// timelineMark is something the record shows besides the bars: a wait on
// a key in flight downstream (At to Until), or an instant: a retry, a
// suppression, a resolution.
type timelineMark struct {
	Kind  string     `json:"kind"`
	At    time.Time  `json:"at"`
	Until *time.Time `json:"until"`
	Text  string     `json:"text"`
}

type timelineGap struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Attempt classes beyond retryclass's, for attempts without an end.
const (
	classRunning = "running"
	classStopped = "stopped"
)

// buildTimeline computes the rows and the axis for recs, oldest first, as
// of now. singleWriter is as for previewRecord.
func buildTimeline(recs []journal.Record, session, tenant string, now time.Time, singleWriter bool) *timeline {
	tl := &timeline{Session: session, Tenant: tenant, At: now.UTC(), Intents: make([]timelineIntent, 0, len(recs)),
		Gaps: []timelineGap{}, Summary: map[string]int{}}
	var spans []span
	for i := range recs {
		in := buildIntent(&recs[i], now, singleWriter)
		tl.Summary[in.Status]++
		for _, a := range in.Attempts {
			spans = append(spans, span{a.Start, a.drawEnd})
		}
		for _, m := range in.Marks {
			s := span{m.At, m.At}
			if m.Until != nil {
				s.to = *m.Until
			}
			spans = append(spans, s)
		}
		if len(in.Attempts) == 0 {
			spans = append(spans, span{in.Created, in.Updated})
		}
		tl.Intents = append(tl.Intents, in)
	}
	tl.axis = newTimeAxis(spans)
	tl.From, tl.To = tl.axis.from(), tl.axis.to()
	for _, g := range tl.axis.gaps() {
		tl.Gaps = append(tl.Gaps, timelineGap{g.from.UTC(), g.to.UTC()})
	}
	return tl
}

func buildIntent(r *journal.Record, now time.Time, singleWriter bool) timelineIntent {
	action, reason := previewRecord(r, now, singleWriter)
	in := timelineIntent{
		Key: r.Key.String(), Tenant: r.Intent.Tenant, Turn: r.Intent.Turn, Tool: r.Intent.Tool,
		Effect: r.Effect.String(), State: r.State.String(), Status: harness.ResultFromRecord(r).Status.String(),
		Created: r.Created.UTC(), Updated: r.Updated.UTC(),
		Attempts: make([]timelineAttempt, 0, len(r.Attempts)), Marks: []timelineMark{},
		ForModel: forModel(r), Reissue: action, ReissueReason: reason,
	}
	switch {
	case r.State == journal.StateAwaiting:
		in.Status, in.Attention = "awaiting", "approval"
	case r.State == journal.StateUnknown:
		in.Attention = "unknown"
	case action == actBlock:
		in.Attention = "blocked"
	}
	live := r.State == journal.StatePending && now.Before(r.Lease.Expires) && !singleWriter
	for i, a := range r.Attempts {
		ta := timelineAttempt{ID: a.ID, Start: a.Start.UTC(), Class: a.Class, Error: a.Error}
		switch {
		case !a.End.IsZero():
			end := a.End.UTC()
			ta.End, ta.drawEnd = &end, end
			if ta.Class == "" {
				ta.Class = retryclass.Success.String()
			}
		case i == len(r.Attempts)-1 && live:
			ta.Class, ta.drawEnd = classRunning, now.UTC()
		default:
			// Its owner stopped: the attempt ran at most until the lease
			// ran out (or until now, if the lease is later).
			ta.Class, ta.drawEnd = classStopped, minTime(r.Lease.Expires, now).UTC()
			if now.Before(r.Lease.Expires) {
				// A live lease of a stopped process (a bbolt journal)
				// says nothing about how long it ran: the bar ends at
				// the record's last change.
				ta.drawEnd = maxTime(r.Updated, a.Start).UTC()
			}
		}
		if ta.drawEnd.Before(ta.Start) {
			ta.drawEnd = ta.Start
		}
		in.Attempts = append(in.Attempts, ta)
	}
	// The journal closes an attempt when the next one starts, so a bar
	// runs until the retry and holds the backoff (or, after a 409, the
	// wait): the marks say which.
	for i := 1; i < len(in.Attempts); i++ {
		prev, next := &in.Attempts[i-1], &in.Attempts[i]
		m := timelineMark{Kind: markRetry, At: next.Start, Text: "retried with the same key after " + prev.Class}
		switch prev.Class {
		case retryclass.InFlight.String():
			until := next.Start
			m = timelineMark{Kind: markWait, At: prev.Start, Until: &until,
				Text: "the downstream answered 409 (the key in flight there); waited " + shortDuration(next.Start.Sub(prev.Start)) + " and asked again"}
		case classStopped:
			m.Text = "taken over after its owner stopped"
		}
		in.Marks = append(in.Marks, m)
	}
	in.Marks = append(in.Marks, decisionMarks(r)...)
	rejected := r.Approval != nil && r.Resolution != nil && r.Resolution.State == journal.StateSuppressed
	if r.State == journal.StateSuppressed && !rejected {
		at := r.Updated.UTC()
		if n := len(in.Attempts); n > 0 && in.Attempts[n-1].End != nil {
			at = *in.Attempts[n-1].End
		}
		in.Marks = append(in.Marks, timelineMark{Kind: markSuppress, At: at, Text: "suppressed (" + r.ErrorClass + "): " + r.ErrorMessage})
	}
	if res := r.Resolution; res != nil && !rejected {
		in.Marks = append(in.Marks, timelineMark{Kind: markResolve, At: res.At.UTC(),
			Text: "resolved " + res.State.String() + " by " + orDash(res.By) + ": " + res.Reason})
	}
	return in
}

// decisionMarks are the approvals given to r and its rejection.
func decisionMarks(r *journal.Record) []timelineMark {
	a := r.Approval
	if a == nil {
		return nil
	}
	var ms []timelineMark
	for i, g := range a.Given {
		ms = append(ms, timelineMark{Kind: markApprove, At: g.At.UTC(),
			Text: fmt.Sprintf("approved by %s (%d of %d) for input %s: %s", orDash(g.By), i+1, a.Need, g.Fingerprint, orDash(g.Reason))})
	}
	if res := r.Resolution; res != nil && res.State == journal.StateSuppressed {
		ms = append(ms, timelineMark{Kind: markReject, At: res.At.UTC(), Text: "rejected by " + orDash(res.By) + ": " + res.Reason})
	}
	return ms
}

// forModel is the text the harness hands the model for a call answered
// from r: the replayed Result's ForModel, so the words are the harness's.
func forModel(r *journal.Record) string {
	res := harness.ResultFromRecord(r)
	return res.ForModel()
}

func joinClasses(as []timelineAttempt) string {
	cs := make([]string, len(as))
	for i, a := range as {
		cs[i] = a.Class
	}
	return strings.Join(cs, ",")
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// shortDuration writes d compactly for a label: "350ms", "4.2s", "12m",
// "3h05m", "2d4h".
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		m := d.Round(time.Second)
		if m%time.Minute == 0 {
			return strings.TrimSuffix(m.String(), "0s")
		}
		return m.String()
	case d < 48*time.Hour:
		m := d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", m/time.Hour, m%time.Hour/time.Minute)
	}
	h := d.Round(time.Hour) / time.Hour
	return fmt.Sprintf("%dd%dh", h/24, h%24)
}
