package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A history builder for hand-written cases: times are small integers.

func callEv(t int64, proc, id string, p int) Event {
	return Event{T: t, Ev: EvCall, Proc: proc, Intent: "i1", P: p, Call: id}
}

func answerEv(t int64, proc, id string, p int, outcome, source, output, text string) Event {
	e := Event{T: t, Ev: EvAnswer, Proc: proc, Intent: "i1", P: p, Call: id, Outcome: outcome, Source: source, Text: text}
	e.Status = outcome
	if source != "" {
		e.Status = source
	}
	if output != "" {
		e.Output = json.RawMessage(output)
	}
	return e
}

func attemptEv(t int64, proc, attempt string, end bool) Event {
	e := Event{T: t, Ev: EvAttempt, Proc: proc, Intent: "i1", Attempt: attempt}
	if end {
		e.Ev = EvAttemptEnd
	}
	return e
}

// keyedRequest is a request that carried Idempotency-Key key.
func keyedRequest(t int64, attempt, key string) Event {
	return Event{T: t, Ev: EvRequest, Proc: "downstream", Intent: "i1", Attempt: attempt, Key: key, Note: "#1 ok 5ms idempotency-key"}
}

// quietAttempt is an Unkeyed attempt whose tool declares a window of
// quietMS from its start.
func quietAttempt(t int64, proc, attempt string, quietMS int64) Event {
	e := attemptEv(t, proc, attempt, false)
	e.QuietMS = quietMS
	return e
}

func effectEv(t int64, attempt string, p, n int) Event {
	return Event{T: t, Ev: EvEffect, Proc: "downstream", Intent: "i1", P: p, Attempt: attempt, Effect: n,
		Output: json.RawMessage(out(p, n, attempt))}
}

func out(p, n int, attempt string) string {
	return fmt.Sprintf(`{"intent":"i1","p":%d,"effect":%d,"attempt":%q}`, p, n, attempt)
}

const (
	failedText   = "The tool failed and nothing was done: POST /act: 417 Expectation Failed"
	rejectedText = "The tool call was rejected and did not run: call not answered: context deadline exceeded"
	unknownText  = "The outcome of this action is unknown"
)

func TestCheckRules(t *testing.T) {
	// executed is one call that ran attempt w0.1#1 and got effect 1.
	executed := []Event{
		callEv(10, "w0.1", "c1", 0),
		attemptEv(11, "w0.1", "w0.1#1", false),
		effectEv(12, "w0.1#1", 0, 1),
		attemptEv(13, "w0.1", "w0.1#1", true),
		answerEv(14, "w0.1", "c1", 0, OutSucceeded, SrcExecuted, out(0, 1, "w0.1#1"), ""),
	}
	with := func(base []Event, more ...Event) []Event { return append(slices.Clone(base), more...) }
	tests := []struct {
		name    string
		kind    Kind
		history []Event
		want    []string
	}{
		{"one effect, executed then replayed", Keyed, with(executed,
			callEv(20, "w1.1", "c2", 0),
			answerEv(21, "w1.1", "c2", 0, OutSucceeded, SrcReplayed, out(0, 1, "w0.1#1"), "")), nil},
		{"two effects of a Keyed tool", Keyed, with(executed,
			attemptEv(20, "w1.1", "w1.1#1", false),
			effectEv(21, "w1.1#1", 0, 2)), []string{RuleDuplicate}},
		{"two effects of an Unkeyed tool", Unkeyed, with(executed,
			effectEv(21, "w1.1#1", 0, 2)), []string{RuleDuplicate}},
		{"one attempt sent twice", Unkeyed, with(executed,
			Event{T: 20, Ev: EvRequest, Proc: "downstream", Intent: "i1", Attempt: "w0.1#1"},
			Event{T: 21, Ev: EvRequest, Proc: "downstream", Intent: "i1", Attempt: "w0.1#1"},
			effectEv(22, "w0.1#1", 0, 2)), []string{RuleDuplicate}},
		{"two effects of an Idempotent tool", Idempotent, with(executed,
			effectEv(21, "w1.1#1", 0, 2)), nil},
		{"a ReadOnly tool is not checked", ReadOnly, with(executed,
			effectEv(21, "w1.1#1", 0, 2)), nil},
		{"success without any effect", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			answerEv(14, "w0.1", "c1", 0, OutSucceeded, SrcExecuted, out(0, 1, "w0.1#1"), "")}, []string{RuleNoEffect}},
		{"collapsed with another payload's output", Keyed, with(executed,
			callEv(10, "w0.1", "c9", 1),
			answerEv(14, "w0.1", "c9", 1, OutSucceeded, SrcCollapsed, out(0, 1, "w0.1#1"), "")), []string{RuleWrongOutput}},
		{"the other payload suppressed", Keyed, with(executed,
			callEv(10, "w0.1", "c9", 1),
			answerEv(14, "w0.1", "c9", 1, OutSuppressed, "", "", "Not repeated")), nil},
		{"replayed a second effect's output", Unkeyed, with(executed,
			effectEv(21, "w1.1#1", 0, 2),
			callEv(30, "w1.1", "c2", 0),
			answerEv(31, "w1.1", "c2", 0, OutSucceeded, SrcReplayed, out(0, 2, "w1.1#1"), "")), []string{RuleDuplicate, RuleWrongOutput}},
		{"failed after its own attempt acted", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w0.1", "w0.1#1", false),
			effectEv(12, "w0.1#1", 0, 1),
			attemptEv(13, "w0.1", "w0.1#1", true),
			attemptEv(14, "w0.1", "w0.1#2", false),
			attemptEv(15, "w0.1", "w0.1#2", true),
			answerEv(16, "w0.1", "c1", 0, OutFailed, "", "", failedText)}, []string{RuleFailed}},
		{"failed, replayed after an earlier effect", Idempotent, with(executed,
			callEv(20, "w1.1", "c2", 0),
			answerEv(21, "w1.1", "c2", 0, OutFailed, "", "", failedText)), []string{RuleFailed, RuleLost}},
		{"failed with nothing done", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w0.1", "w0.1#1", false),
			attemptEv(13, "w0.1", "w0.1#1", true),
			answerEv(16, "w0.1", "c1", 0, OutFailed, "", "", failedText)}, nil},
		{"failed, and a later call by another process acted", Unkeyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			answerEv(16, "w0.1", "c1", 0, OutFailed, "", "", failedText),
			callEv(20, "w1.1", "c2", 0),
			attemptEv(21, "w1.1", "w1.1#1", false),
			effectEv(22, "w1.1#1", 0, 1),
			answerEv(24, "w1.1", "c2", 0, OutSucceeded, SrcExecuted, out(0, 1, "w1.1#1"), "")}, nil},
		{"rejected while its flight's attempt acted", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w0.1", "w0.1#1", false),
			attemptEv(13, "w0.1", "w0.1#1", true),
			answerEv(14, "w0.1", "c1", 0, OutRejected, "", "", rejectedText),
			effectEv(40, "w0.1#1", 0, 1)}, []string{RuleRejected}},
		{"rejected while its process ran the other payload of the step key", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w0.1", "w0.1#1", false),
			attemptEv(13, "w0.1", "w0.1#1", true),
			answerEv(14, "w0.1", "c1", 0, OutRejected, "", "", rejectedText),
			effectEv(12, "w0.1#1", 1, 1)}, nil},
		{"rejected while another process acted", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w1.1", "w1.1#1", false),
			answerEv(14, "w0.1", "c1", 0, OutRejected, "", "", rejectedText),
			effectEv(40, "w1.1#1", 0, 1)}, nil},
		{"unknown after a success", Keyed, with(executed,
			callEv(20, "w1.1", "c2", 0),
			answerEv(21, "w1.1", "c2", 0, OutUnknown, "", "", unknownText)), []string{RuleLost}},
		{"in progress after a success", Keyed, with(executed,
			callEv(20, "w1.1", "c2", 0),
			answerEv(21, "w1.1", "c2", 0, OutInProgress, "", "", "Not repeated")), []string{RuleLost}},
		{"unknown while the first call ran", Keyed, with(executed,
			callEv(11, "w1.1", "c2", 0),
			answerEv(13, "w1.1", "c2", 0, OutUnknown, "", "", unknownText)), nil},
		{"a live owner told its lease was lost", Keyed, []Event{
			callEv(10, "w0.1", "c1", 0),
			attemptEv(11, "w0.1", "w0.1#1", false),
			effectEv(20, "w0.1#1", 0, 1),
			func() Event {
				e := answerEv(30, "w0.1", "c1", 0, OutUnknown, "", "", unknownText)
				e.Err = "tool t: unknown (maybe-executed): the outcome could not be recorded: lease lost: record owned by another attempt"
				return e
			}()}, []string{RuleLeaseLost}},
		{"a Keyed intent under two keys", Keyed, with(executed,
			keyedRequest(20, "w0.1#1", "K1"),
			keyedRequest(30, "w1.1#1", "K2")), []string{RuleKeys}},
		{"a Keyed request without Idempotency-Key", Keyed, with(executed,
			Event{T: 20, Ev: EvRequest, Proc: "downstream", Intent: "i1", Attempt: "w0.1#1", Key: "K1", Note: "#1 ok 5ms"}), []string{RuleKeys}},
		{"a Keyed intent under one key, twice", Keyed, with(executed,
			keyedRequest(20, "w0.1#1", "K1"),
			keyedRequest(30, "w1.1#1", "K1")), nil},
		{"a late effect, then a run after the window", Unkeyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			quietAttempt(1, "w0.1", "w0.1#1", 1),
			attemptEv(2, "w0.1", "w0.1#1", true),
			effectEv(2_000_000, "w0.1#1", 0, 1),
			quietAttempt(3_000_000, "w0.1", "w0.1#2", 1),
			effectEv(3_000_001, "w0.1#2", 0, 2),
		}, []string{RuleSettleBroken}},
		// A loaded machine: the downstream's 700 ms effect landed 755 ms
		// into a 750 ms window, just after Reconcile said "did not
		// happen"; the run after it is the answer. seed 2 bolt, i0106.
		{"a late effect, then a run after the window, answered with the run's output", Unkeyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			quietAttempt(1, "w0.1", "w0.1#1", 750),
			attemptEv(250_000_000, "w0.1", "w0.1#1", true),
			{T: 751_000_000, Ev: EvReconcile, Proc: "w0.1", Intent: "i1", Note: "did not happen"},
			effectEv(755_000_000, "w0.1#1", 0, 1),
			quietAttempt(790_000_000, "w0.1", "w0.1#2", 750),
			effectEv(800_000_000, "w0.1#2", 0, 2),
			attemptEv(801_000_000, "w0.1", "w0.1#2", true),
			answerEv(802_000_000, "w0.1", "c1", 0, OutSucceeded, SrcExecuted, out(0, 2, "w0.1#2"), out(0, 2, "w0.1#2")),
		}, []string{RuleSettleBroken}},
		{"a late effect, and a run inside its window", Unkeyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			quietAttempt(1, "w0.1", "w0.1#1", 1),
			attemptEv(2, "w0.1", "w0.1#1", true),
			quietAttempt(500_000, "w0.1", "w0.1#2", 1),
			effectEv(600_000, "w0.1#2", 0, 1),
			effectEv(2_000_000, "w0.1#1", 0, 2),
		}, []string{RuleDuplicate, RuleSettleBroken}},
		{"an altered input run after a suppression", Keyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			answerEv(5, "w0.1", "c1", 0, OutSuppressed, "", "", "suppressed"),
			callEv(10, "w0.1", "c2", 1),
			attemptEv(11, "w0.1", "w0.1#2", false),
			effectEv(12, "w0.1#2", 1, 1),
		}, []string{RuleGuard}},
		// A loaded machine ran the worker's two issues together: the
		// altered input's call was made before the suppression, so its
		// Begin may have come first, though its tool (and so its attempt
		// line) ran only after the answer. seed 2 postgres, i0059.
		{"an altered input called before the suppression, run after it", Keyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			callEv(1, "w0.1", "c2", 1),
			answerEv(5, "w0.1", "c1", 0, OutSuppressed, "", "", "suppressed"),
			attemptEv(6, "w0.1", "w0.1#2", false),
			effectEv(7, "w0.1#2", 1, 1),
			attemptEv(8, "w0.1", "w0.1#2", true),
			answerEv(9, "w0.1", "c2", 1, OutSucceeded, SrcExecuted, out(1, 1, "w0.1#2"), out(1, 1, "w0.1#2")),
		}, nil},
		{"an altered input called before the suppression and answered, then called and run again", Keyed, []Event{
			callEv(0, "w0.1", "c1", 0),
			callEv(1, "w0.1", "c2", 1),
			answerEv(3, "w0.1", "c2", 1, OutFailed, "", "", failedText),
			answerEv(5, "w0.1", "c1", 0, OutSuppressed, "", "", "suppressed"),
			callEv(10, "w0.1", "c3", 1),
			attemptEv(11, "w0.1", "w0.1#3", false),
			effectEv(12, "w0.1#3", 1, 1),
		}, []string{RuleGuard}},
		{"rejected after a success is no answer", Keyed, with(executed,
			callEv(20, "w1.1", "c2", 0),
			answerEv(21, "w1.1", "c2", 0, OutRejected, "", "", "The tool call was rejected and did not run: journal: connection reset")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := &Plan{Seed: 7, Store: "bolt", Intents: []Intent{{ID: "i1", Tool: "t", Kind: tt.kind, Scenario: ScMixed, Payloads: 2}}}
			rep := Check(plan, tt.history)
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Rule)
				if v.Seed != 7 || v.Intent != "i1" || len(v.History) != len(tt.history) {
					t.Errorf("violation %s: seed %d intent %q with %d history lines; want seed 7, intent i1, %d lines",
						v.Rule, v.Seed, v.Intent, len(v.History), len(tt.history))
				}
			}
			for _, v := range rep.Broken {
				got = append(got, v.Rule)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check rules = %v; want %v (violations: %+v, broken: %+v)", got, tt.want, rep.Violations, rep.Broken)
			}
			if rep.Failed() != (len(rep.Violations) > 0) {
				t.Errorf("Failed() = %v with %d violations", rep.Failed(), len(rep.Violations))
			}
			for _, v := range rep.Violations {
				if twice := strings.Contains(v.Detail, "more than once"); twice != strings.Contains(tt.name, "twice") {
					t.Errorf("%s detail %q: says an attempt was sent more than once = %v; want %v", v.Rule, v.Detail, twice, !twice)
				}
			}
		})
	}
}

func TestCheckCountsKnowableUnknowns(t *testing.T) {
	history := []Event{
		callEv(10, "w0.1", "c1", 0),
		attemptEv(11, "w0.1", "w0.1#1", false),
		effectEv(12, "w0.1#1", 0, 1),
		{T: 13, Ev: EvResponse, Proc: "downstream", Intent: "i1", Attempt: "w0.1#1", Code: 200, Note: "delivered"},
		answerEv(20, "w0.1", "c1", 0, OutUnknown, "", "", unknownText),
		callEv(30, "w0.1", "c2", 0),
		answerEv(31, "w0.1", "c2", 0, OutUnknown, "", "", unknownText),
	}
	plan := &Plan{Intents: []Intent{{ID: "i1", Kind: Unkeyed, Payloads: 1}}}
	rep := Check(plan, history)
	if got := rep.Soft[SoftKnowable]; got != 2 {
		t.Errorf("Soft[%s] = %d; want 2", SoftKnowable, got)
	}
	if len(rep.Violations) != 0 {
		t.Errorf("Violations = %+v; want none", rep.Violations)
	}
	// A response the client did not read makes the unknown honest.
	history[3].Note = "client gone"
	if got := Check(plan, history).Soft[SoftKnowable]; got != 0 {
		t.Errorf("with the client gone, Soft[%s] = %d; want 0", SoftKnowable, got)
	}
}

func TestCheckCounts(t *testing.T) {
	history := []Event{
		callEv(10, "w0.1", "c1", 0),
		attemptEv(11, "w0.1", "w0.1#1", false),
		effectEv(12, "w0.1#1", 0, 1),
		answerEv(14, "w0.1", "c1", 0, OutSucceeded, SrcExecuted, out(0, 1, "w0.1#1"), ""),
		callEv(20, "w0.2", "c2", 0),
		{T: 15, Ev: EvProc, Proc: "runner", Note: "kill slot 0 pid 1"},
		{T: 16, Ev: EvFault, Proc: "runner", Note: "pg_terminate_backend 2"},
		{T: 17, Ev: EvFault, Proc: "runner", Note: failoverNote + "promote.sh"},
	}
	plan := &Plan{Intents: []Intent{{ID: "i1", Kind: Keyed, Payloads: 1}, {ID: "i2", Kind: Keyed, Payloads: 1}}}
	rep := Check(plan, history)
	if rep.Intents != 2 || rep.Calls != 2 || rep.Effects != 1 || rep.Kills != 1 || rep.Terminations != 1 || rep.Failovers != 1 {
		t.Errorf("Check counts = %d intents, %d calls, %d effects, %d kills, %d terminations, %d failovers; want 2, 2, 1, 1, 1, 1",
			rep.Intents, rep.Calls, rep.Effects, rep.Kills, rep.Terminations, rep.Failovers)
	}
	if got := rep.Answers["succeeded/executed"]; got != 1 {
		t.Errorf(`Answers["succeeded/executed"] = %d; want 1`, got)
	}
}

func TestViolationHistoryShowsTheKill(t *testing.T) {
	history := []Event{
		callEv(10, "w0.1", "c1", 0),
		attemptEv(11, "w0.1", "w0.1#1", false),
		{T: 12, Ev: EvProc, Proc: "runner", Subject: "w0.1", Note: "kill w0.1 pid 9"},
		{T: 13, Ev: EvProc, Proc: "runner", Subject: "w1.1", Note: "kill w1.1 pid 8"},
		{T: 14, Ev: EvFault, Proc: "runner", Subject: "w0.2", Note: "pg_terminate_backend 7"},
		callEv(20, "w0.2", "c2", 0),
		attemptEv(21, "w0.2", "w0.2#1", false),
		effectEv(22, "w0.2#1", 0, 1),
		effectEv(30, "w0.1#1", 0, 2),
		{T: 40, Ev: EvProc, Proc: "runner", Subject: "w0.2", Note: "kill w0.2 pid 10"},
	}
	plan := &Plan{Intents: []Intent{{ID: "i1", Kind: Unkeyed, Payloads: 1}}}
	rep := Check(plan, history)
	if len(rep.Violations) != 1 {
		t.Fatalf("Violations = %+v; want one duplicate-effect", rep.Violations)
	}
	var notes []string
	for _, e := range rep.Violations[0].History {
		if e.Proc == "runner" {
			notes = append(notes, e.Note)
		}
	}
	// The kill of w1.1 is another process's; w0.2's kill came after the
	// intent's last event.
	want := []string{"kill w0.1 pid 9", "pg_terminate_backend 7"}
	if !slices.Equal(notes, want) {
		t.Errorf("runner lines in the violation's history = %q; want %q", notes, want)
	}
}

// Approval histories: times in milliseconds.

func ms(n int64) int64 { return n * int64(time.Millisecond) }

func decideEv(start, end int64, do, by, outcome string) []Event {
	e := Event{T: ms(start), Ev: EvDecide, Proc: "runner", Intent: "i1", By: by, Note: do}
	r := e
	r.T, r.Ev, r.Outcome = ms(end), EvDecided, outcome
	return []Event{e, r}
}

const (
	awaitingText = "This action needs a person's approval before it runs, and it has not run: it needs 2 approval(s), 0 given"
	expiredText  = "This action was not run, and will not be: it needed approval, and not run by its approval deadline 2026-12-07T16:20:16Z (1 of 2 approvals given)."
	declinedText = "This action was not run, and will not be: it needed approval, and rejected by carol: agentcheck: reject."
)

func TestCheckApprovalRules(t *testing.T) {
	at := func(t int64, e Event) Event { e.T = ms(t); return e }
	asked := []Event{
		at(0, callEv(0, "w0.1", "c1", 0)),
		at(5, answerEv(0, "w0.1", "c1", 0, OutAwaiting, "", "", awaitingText)),
	}
	// ran is a call at 300 ms whose attempt made the effect.
	ran := []Event{
		at(300, callEv(0, "w0.1", "c2", 0)),
		at(301, attemptEv(0, "w0.1", "w0.1#1", false)),
		at(302, effectEv(0, "w0.1#1", 0, 1)),
		at(303, attemptEv(0, "w0.1", "w0.1#1", true)),
		at(310, answerEv(0, "w0.1", "c2", 0, OutSucceeded, SrcExecuted, out(0, 1, "w0.1#1"), "")),
	}
	hist := func(parts ...[]Event) []Event {
		h := slices.Concat(parts...)
		slices.SortStableFunc(h, func(a, b Event) int { return int(a.T - b.T) })
		return h
	}
	answered := func(t int64, id, outcome, text string) []Event {
		return []Event{at(t, callEv(0, "w1.1", id, 0)), at(t+5, answerEv(0, "w1.1", id, 0, outcome, "", "", text))}
	}
	tests := []struct {
		name    string
		history []Event
		want    []string
	}{
		{"approved by two, then run once", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecAccepted), ran), nil},
		{"run with one approval of two", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecRefused), ran),
			[]string{RuleUnapproved}},
		{"run with one approver's two approvals", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "ann", DecAccepted), ran),
			[]string{RuleUnapproved}},
		{"run after the last approval was sent, before its answer", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(290, 305, DoApprove, "bob", DecAccepted), ran), nil},
		{"run after an approval whose answer was lost", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecMaybe), ran), nil},
		{"a forged approval accepted", hist(asked, decideEv(100, 110, DoForge, "mallory", DecAccepted)),
			[]string{RuleForged}},
		{"a forged approval refused", hist(asked, decideEv(100, 110, DoForge, "mallory", DecRefused)), nil},
		{"run after a rejection", hist(asked, decideEv(100, 110, DoReject, "carol", DecAccepted), ran),
			[]string{RuleUnapproved, RuleRanAfterNo}},
		{"run after a call was told the deadline had passed", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecAccepted),
			answered(2500, "c3", OutSuppressed, expiredText),
			[]Event{at(2600, callEv(0, "w0.2", "c4", 0)), at(2601, attemptEv(0, "w0.2", "w0.2#1", false)), at(2602, effectEv(0, "w0.2#1", 0, 1))}),
			[]string{RuleRanAfterNo}},
		{"awaiting after the approvals were recorded", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecAccepted),
			answered(300, "c3", OutAwaiting, awaitingText)), []string{RuleApprovalAnswer}},
		{"awaiting, joined to a flight begun before the approvals", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecAccepted),
			[]Event{at(190, callEv(0, "w1.1", "c0", 0)), at(306, answerEv(0, "w1.1", "c0", 0, OutAwaiting, "", "", awaitingText))},
			answered(300, "c3", OutAwaiting, awaitingText)), nil},
		{"awaiting while the last approval was on its way", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 310, DoApprove, "bob", DecAccepted),
			answered(300, "c3", OutAwaiting, awaitingText)), nil},
		{"told rejected with no rejection sent", hist(asked, answered(300, "c3", OutSuppressed, declinedText)),
			[]string{RuleApprovalAnswer}},
		{"told rejected after a rejection", hist(asked, decideEv(100, 110, DoReject, "carol", DecAccepted),
			answered(300, "c3", OutSuppressed, declinedText)), nil},
		{"told expired before the deadline", hist(asked, answered(1000, "c3", OutSuppressed, expiredText)),
			[]string{RuleApprovalAnswer}},
		{"told expired after the deadline", hist(asked, answered(2100, "c3", OutSuppressed, expiredText)), nil},
		{"told expired after it ran", hist(asked,
			decideEv(100, 110, DoApprove, "ann", DecAccepted), decideEv(200, 210, DoApprove, "bob", DecAccepted), ran,
			answered(2500, "c3", OutSuppressed, expiredText)), []string{RuleApprovalAnswer, RuleLost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := &Plan{Seed: 7, Store: "bolt", Intents: []Intent{{ID: "i1", Tool: "approve_keyed", Kind: Keyed, Scenario: ScApproval, Payloads: 1}}}
			rep := Check(plan, tt.history)
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Rule)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check rules = %v; want %v (violations: %+v)", got, tt.want, rep.Violations)
			}
		})
	}
}

func TestCheckServerReconcile(t *testing.T) {
	effect := func(t int64, key string) Event {
		e := effectEv(t, "w0.1#1", 0, 1)
		e.Key = key
		return e
	}
	said := func(t int64, key, note, output string) Event {
		e := Event{T: t, Ev: EvReconcile, Proc: "downstream", Intent: "i1", Key: key, Note: note}
		if output != "" {
			e.Output = json.RawMessage(output)
		}
		return e
	}
	tests := []struct {
		name    string
		history []Event
		wrong   bool
	}{
		{"happened, with the effect's output", []Event{effect(10, "K"), said(20, "K", "happened", out(0, 1, "w0.1#1"))}, false},
		{"did not happen, before any effect", []Event{said(5, "K", "did not happen", ""), effect(10, "K")}, false},
		{"did not happen, after the effect", []Event{effect(10, "K"), said(20, "K", "did not happen", "")}, true},
		{"happened, with no effect", []Event{said(20, "K", "happened", out(0, 1, "w0.1#1"))}, true},
		{"happened, with another output", []Event{effect(10, "K"), said(20, "K", "happened", out(0, 2, "w0.1#1"))}, true},
		{"did not happen, after another key's effect", []Event{effect(10, "K2"), said(20, "K", "did not happen", "")}, false},
		{"a worker's hook is not the server's", []Event{effect(10, "K"), {T: 20, Ev: EvReconcile, Proc: "w0.1", Intent: "i1", Key: "K", Note: "did not happen"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := &Plan{Intents: []Intent{{ID: "i1", Tool: "idempotent", Kind: Idempotent, Payloads: 1}}}
			rep := Check(plan, tt.history)
			got := len(rep.ByRule[RuleReconciledWrong]) > 0
			if got != tt.wrong {
				t.Errorf("reconciled-wrongly = %v; want %v (violations %+v)", got, tt.wrong, rep.Violations)
			}
		})
	}
}
