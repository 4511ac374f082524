package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// The rules Check applies to each intent. A violation of any of them fails
// a run.
const (
	// RuleDuplicate: a Keyed or Unkeyed intent had more than one effect.
	// An effect that broke its tool's declared window (RuleSettleBroken)
	// is not counted against an attempt that began after the window.
	RuleDuplicate = "duplicate-effect"
	// RuleKeys: the requests of one intent's payload (of every payload,
	// under a StepKey) reached the downstream under more than one key
	// (Idempotency-Key, or X-Agentonce-Key for an Unkeyed tool), or a
	// Keyed intent's request came without Idempotency-Key. One intent has
	// one key; a downstream that dedupes by key would act once per key.
	RuleKeys = "intent-under-two-keys"
	// RuleGuard: an intent without a StepKey (each payload its own key)
	// had an effect by an attempt that began after a call of another of
	// its payloads, in the same turn and tool, was answered Suppressed,
	// and to no call of its payload made before that answer: the
	// suppression guard let an altered input run.
	RuleGuard = "guard-bypassed"
	// RuleNoEffect: a call was answered with a success, but the intent
	// never had an effect.
	RuleNoEffect = "success-without-effect"
	// RuleWrongOutput: a success answer's output is not the output of the
	// intent's first effect (of any effect, for Idempotent tools): another
	// payload's result, or a second effect's.
	RuleWrongOutput = "wrong-output"
	// RuleFailed: a call was answered Failed (or told "nothing was done"
	// or "did not run" in any other answer but a rejection) although an
	// effect of the intent happened in an attempt begun before the call,
	// or in an attempt of the call's own flight.
	RuleFailed = "failed-but-effect"
	// RuleRejected: a call was answered Rejected ("rejected and did not
	// run") although an attempt of its own flight (the same process,
	// running while the call waited) made an effect.
	RuleRejected = "rejected-but-ran"
	// RuleLost: after a call was answered with a success, a later call of
	// the same payload was answered unknown, failed or suppressed.
	RuleLost = "lost-outcome"
	// RuleLeaseLost: a process that was alive to answer was told its
	// intent's lease was lost. An owner renews its lease while its flight
	// runs, so only an owner that stopped renewing (a crash) loses it; a
	// live one that does has been overtaken, and its caller is told
	// "unknown" about an effect it may well have made.
	RuleLeaseLost = "live-owner-lost-lease"
	// RuleReconciledWrong: the server's Reconcile (ModeMiddleware with
	// ServerOptions.Reconcile) answered that a key's effect happened with
	// another output than the key's first effect's, or when none had; or
	// that it did not happen when one had.
	RuleReconciledWrong = "reconciled-wrongly"
)

// Rules lists the rules in the order reports show them.
var Rules = []string{RuleDuplicate, RuleKeys, RuleGuard, RuleNoEffect, RuleWrongOutput, RuleFailed, RuleRejected, RuleLost, RuleLeaseLost,
	RuleUnapproved, RuleRanAfterNo, RuleForged, RuleApprovalAnswer, RuleReconciledWrong}

// RuleSettleBroken: an Unkeyed intent's effect landed after the window its
// tool declares (the attempt's start + Timeout + Settle). The tool's
// declaration was broken, by the downstream, not by the harness (on a
// loaded machine the downstream's scheduler makes it late): it is listed in
// Report.Broken, never among the violations, and does not fail a run. A
// re-run after such an effect is not a duplicate; a re-run that began
// inside the window still is.
const RuleSettleBroken = "settle-window-broken"

// SoftKnowable counts answers that are not violations but say less than
// could be known: Unknown for an intent whose effect the downstream had
// committed and answered to a client that was still there.
const SoftKnowable = "unknown-but-knowable"

// Violation is one rule broken by one intent.
type Violation struct {
	Seed     int64  `json:"seed"`
	Store    string `json:"store"`
	Rule     string `json:"rule"`
	Intent   string `json:"intent"`
	Scenario string `json:"scenario"`
	Tool     string `json:"tool"`
	Detail   string `json:"detail"`
	// History is the intent's lines of the history, in time order.
	History []Event `json:"history"`
}

// Report is what Check found in one history.
type Report struct {
	Seed  int64  `json:"seed"`
	Store string `json:"store"`
	// Downstream is, in ModeMiddleware, "middleware/" and the
	// middleware's store; empty for the builtin downstream.
	Downstream string `json:"downstream,omitempty"`
	History    string `json:"history,omitempty"`
	Intents    int    `json:"intents"`
	Calls      int    `json:"calls"`
	Effects    int    `json:"effects"`
	// Answers counts answers by outcome (and source, for successes).
	Answers map[string]int `json:"answers"`
	// Decisions counts the approver's decisions by kind and outcome
	// ("approve/accepted").
	Decisions map[string]int `json:"decisions,omitempty"`
	// Kills and Terminations count SIGKILLs and PostgreSQL backends
	// terminated.
	Kills        int `json:"kills"`
	Terminations int `json:"pg_terminations"`
	// Failovers counts the runs of Options.Failover.
	Failovers int `json:"failovers,omitempty"`
	// ByRule counts violations per rule and scenario.
	ByRule     map[string]map[string]int `json:"by_rule"`
	Soft       map[string]int            `json:"soft"`
	Violations []Violation               `json:"violations"`
	// Broken lists the effects that broke their tool's declaration
	// (RuleSettleBroken): not the harness's violations.
	Broken []Violation `json:"broken,omitempty"`
	// Problems are failures of the run itself (a worker that exited with
	// an error), which make its verdict incomplete.
	Problems []string `json:"problems,omitempty"`
	// ServerLog holds, in ModeMiddleware, what the middleware logged
	// because it could not tell a client (a response it could not
	// record): not a violation, but worth reading beside them.
	ServerLog []string `json:"server_log,omitempty"`
	// ServerUnknowns counts, in ModeMiddleware, the server's records left
	// without an answer and how many Reconcile settled.
	ServerUnknowns *ServerUnknowns `json:"server_unknowns,omitempty"`
	// WorkDir is the run's kept work directory (plan, per-process
	// histories and logs, the bbolt journal) when the run failed.
	WorkDir string `json:"work_dir,omitempty"`
}

// Failed reports whether the report shows a violation or a problem.
func (r *Report) Failed() bool { return len(r.Violations) > 0 || len(r.Problems) > 0 }

type attemptView struct {
	proc       string
	start, end int64
	// quiet is the end of the window its tool declares (Unix ns), 0 when
	// none is known.
	quiet int64
}

type callView struct {
	id, proc   string
	p          int
	start, end int64
	ans        *Event
}

type effectView struct {
	ev      Event
	attempt *attemptView
}

// intentView is one intent's history, taken apart.
type intentView struct {
	in       *Intent
	events   []Event
	calls    []*callView // in start order
	attempts map[string]*attemptView
	effects  []effectView // in time order
	// delivered holds the attempts whose success response reached a
	// client that was still there, with the time.
	delivered map[string]int64
	// sent counts the requests the downstream got per attempt id.
	sent map[string]int
	// keys counts the requests per key they carried, by payload (all
	// under 0 with a StepKey); keyless counts a Keyed intent's requests
	// without Idempotency-Key.
	keys    map[int]map[string]int
	keyless int
	// decisions are the approver's, in the order they were sent.
	decisions []*decisionView
	// serverReconciles are the middleware's Reconcile answers
	// (ServerOptions.Reconcile).
	serverReconciles []Event
}

// Check decides, intent by intent, whether history (ordered by time, as
// ReadHistory returns it) keeps the rules, and counts what it saw.
func Check(plan *Plan, history []Event) *Report {
	r := &Report{Seed: plan.Seed, Store: plan.Store, Intents: len(plan.Intents),
		Answers: map[string]int{}, Decisions: map[string]int{}, ByRule: map[string]map[string]int{}, Soft: map[string]int{}}
	views := make(map[string]*intentView, len(plan.Intents))
	for i := range plan.Intents {
		in := &plan.Intents[i]
		views[in.ID] = &intentView{in: in, attempts: map[string]*attemptView{}, delivered: map[string]int64{}, sent: map[string]int{}, keys: map[int]map[string]int{}}
	}
	var runner []Event // process events and faults
	for _, e := range history {
		switch e.Ev {
		case EvProc:
			if strings.HasPrefix(e.Note, "kill") {
				r.Kills++
			}
			runner = append(runner, e)
		case EvFault:
			switch {
			case strings.HasPrefix(e.Note, failoverNote):
				r.Failovers++
			case e.Intent == "": // a corrupted record names its intent
				r.Terminations++
			}
			runner = append(runner, e)
		}
		v := views[e.Intent]
		if v == nil {
			continue
		}
		v.add(e)
	}
	for i := range plan.Intents {
		v := views[plan.Intents[i].ID]
		r.Calls += len(v.calls)
		r.Effects += len(v.effects)
		for _, c := range v.calls {
			if c.ans != nil {
				k := c.ans.Outcome
				if c.ans.Source != "" {
					k += "/" + c.ans.Source
				}
				r.Answers[k]++
			}
		}
		for _, d := range v.decisions {
			r.Decisions[d.do+"/"+d.outcome]++
		}
		for _, found := range v.check(skewMargin(plan)) {
			found.Seed, found.Store = plan.Seed, plan.Store
			found.Intent, found.Scenario, found.Tool = v.in.ID, v.in.Scenario, v.in.Tool
			found.History = v.withFaults(runner)
			if found.Rule == RuleSettleBroken {
				r.Broken = append(r.Broken, found)
				continue
			}
			r.Violations = append(r.Violations, found)
			if r.ByRule[found.Rule] == nil {
				r.ByRule[found.Rule] = map[string]int{}
			}
			r.ByRule[found.Rule][found.Scenario]++
		}
		r.Soft[SoftKnowable] += v.knowable()
	}
	return r
}

// withFaults returns the intent's events with the kills and faults that
// struck its processes while it had events, in time order: a violation's
// minimal history.
func (v *intentView) withFaults(runner []Event) []Event {
	if len(v.events) == 0 {
		return nil
	}
	procs := map[string]bool{}
	for _, e := range v.events {
		procs[e.Proc] = true
		if e.Attempt != "" {
			procs[procOf(e.Attempt)] = true
		}
	}
	first, last := v.events[0].T, v.events[len(v.events)-1].T
	out := slices.Clone(v.events)
	for _, e := range runner {
		if (procs[e.Subject] || strings.HasPrefix(e.Note, failoverNote)) && e.T >= first && e.T <= last && (e.Ev == EvFault || strings.HasPrefix(e.Note, "kill")) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.T, b.T) })
	return out
}

// add files one event of the intent.
func (v *intentView) add(e Event) {
	v.events = append(v.events, e)
	switch e.Ev {
	case EvCall:
		v.calls = append(v.calls, &callView{id: e.Call, proc: e.Proc, p: e.P, start: e.T, end: math.MaxInt64})
	case EvAnswer:
		for _, c := range v.calls {
			if c.id == e.Call && c.ans == nil {
				c.ans, c.end = &e, e.T
				break
			}
		}
	case EvAttempt:
		a := v.attempt(e.Attempt, e.Proc, e.T)
		if e.QuietMS > 0 {
			a.quiet = e.T + e.QuietMS*int64(time.Millisecond)
		}
	case EvAttemptEnd:
		if a := v.attempts[e.Attempt]; a != nil {
			a.end = e.T
		}
	case EvRequest:
		v.attempt(e.Attempt, procOf(e.Attempt), e.T)
		v.sent[e.Attempt]++
		if e.Key != "" {
			p := e.P
			if v.in.StepKey != "" {
				p = 0
			}
			if v.keys[p] == nil {
				v.keys[p] = map[string]int{}
			}
			v.keys[p][e.Key]++
		}
		if v.in.Kind == Keyed && !strings.Contains(e.Note, "idempotency-key") {
			v.keyless++
		}
	case EvEffect:
		v.effects = append(v.effects, effectView{ev: e, attempt: v.attempt(e.Attempt, procOf(e.Attempt), e.T)})
	case EvDecide, EvDecided:
		v.addDecision(e)
	case EvReconcile:
		if e.Proc == "downstream" {
			v.serverReconciles = append(v.serverReconciles, e)
		}
	case EvResponse:
		if e.Code == 200 && strings.Contains(e.Note, "delivered") {
			if _, ok := v.delivered[e.Attempt]; !ok {
				v.delivered[e.Attempt] = e.T
			}
		}
	}
}

// attempt returns the attempt with id, making it from what the downstream
// saw when the worker's line is missing (a worker killed mid-write).
func (v *intentView) attempt(id, proc string, t int64) *attemptView {
	a := v.attempts[id]
	if a == nil {
		a = &attemptView{proc: proc, start: t, end: math.MaxInt64}
		v.attempts[id] = a
	}
	return a
}

// procOf returns the process of an attempt id: the harness makes attempt
// ids "owner#n", and a worker's owner is its process name.
func procOf(attempt string) string {
	p, _, _ := strings.Cut(attempt, "#")
	return p
}

// ofFlight reports whether attempt a ran in c's flight: in c's process
// while c waited (a process runs one flight per key at a time).
func ofFlight(a *attemptView, c *callView) bool {
	return a != nil && a.proc == c.proc && a.start <= c.end && a.end >= c.start
}

// check returns the intent's violations, rule by rule; margin is how far
// behind the true clock a worker's journal clock may run.
func (v *intentView) check(margin time.Duration) []Violation {
	if v.in.Kind == ReadOnly {
		return nil
	}
	var out []Violation
	if spec := toolSpec(v.in.Tool); spec.Approvals > 0 {
		out = v.approvalViolations(spec, margin)
	}
	late := v.lateEffects()
	out = append(out, v.settleBroken(late)...)
	if msg := v.keyProblems(); msg != "" {
		out = append(out, Violation{Rule: RuleKeys, Detail: msg})
	}
	if msg := v.guardBypassed(); msg != "" {
		out = append(out, Violation{Rule: RuleGuard, Detail: msg})
	}
	if msg := v.reconciledWrongly(); msg != "" {
		out = append(out, Violation{Rule: RuleReconciledWrong, Detail: msg})
	}
	out = append(out, v.duplicateEffects(late)...)
	return append(out, v.wrongAnswers()...)
}

// settleBroken is a violation per effect that landed past its tool's
// declared Timeout + Settle.
func (v *intentView) settleBroken(late []effectView) []Violation {
	var out []Violation
	for _, e := range late {
		out = append(out, Violation{Rule: RuleSettleBroken, Detail: fmt.Sprintf(
			"effect %d by attempt %s landed %s after the attempt began, past the %s its tool declares (Timeout + Settle): the downstream broke the tool's declaration",
			e.ev.Effect, e.ev.Attempt, time.Duration(e.ev.T-e.attempt.start).Round(time.Millisecond),
			time.Duration(e.attempt.quiet-e.attempt.start).Round(time.Millisecond))})
	}
	return out
}

// keyProblems says which payloads reached the downstream under more than
// one key, and how many Keyed requests carried none; "" when neither.
func (v *intentView) keyProblems() string {
	var msgs []string
	for _, p := range slices.Sorted(maps.Keys(v.keys)) {
		if byKey := v.keys[p]; len(byKey) > 1 {
			var keys []string
			for _, k := range slices.Sorted(maps.Keys(byKey)) {
				keys = append(keys, fmt.Sprintf("%s (%d requests)", k, byKey[k]))
			}
			msgs = append(msgs, fmt.Sprintf("payload %d reached the downstream under %d keys: %s", p, len(byKey), strings.Join(keys, ", ")))
		}
	}
	if v.keyless > 0 {
		msgs = append(msgs, fmt.Sprintf("%d Keyed requests carried no Idempotency-Key", v.keyless))
	}
	return strings.Join(msgs, "; ")
}

// duplicateEffects is a violation per key under which a Keyed or Unkeyed
// intent's effect happened more than once.
func (v *intentView) duplicateEffects(late []effectView) []Violation {
	if kind := v.in.Kind; kind != Keyed && kind != Unkeyed {
		return nil
	}
	var out []Violation
	for _, dups := range v.byKey(v.duplicates(late)) {
		if len(dups) < 2 {
			continue
		}
		var by, twice []string
		for _, e := range dups {
			by = append(by, e.ev.Attempt)
			if v.sent[e.ev.Attempt] > 1 && !slices.Contains(twice, e.ev.Attempt) {
				twice = append(twice, e.ev.Attempt)
			}
		}
		note := ""
		if len(twice) > 0 {
			// One attempt id, two requests: resent below the harness (net/http
			// resends a request it deems replayable after a broken connection).
			note = fmt.Sprintf(" (attempt %s reached the downstream more than once)", strings.Join(twice, ", "))
		}
		out = append(out, Violation{Rule: RuleDuplicate, Detail: fmt.Sprintf("%d effects, by attempts %s%s", len(dups), strings.Join(by, ", "), note)})
	}
	return out
}

// wrongAnswers judges every answer a call got against the effects: a
// violation per rule, listing the calls that broke it.
func (v *intentView) wrongAnswers() []Violation {
	var noEffect, wrong, failed, rejected, leaseLost []string
	for _, c := range v.calls {
		a := c.ans
		if a == nil {
			continue
		}
		if a.Outcome == OutUnknown && strings.Contains(a.Err, "lease lost") {
			leaseLost = append(leaseLost, fmt.Sprintf("%s told unknown: %s", c.id, clip(a.Err)))
		}
		switch a.Outcome {
		case OutSucceeded:
			if len(v.effects) == 0 {
				noEffect = append(noEffect, fmt.Sprintf("%s (%s)", c.id, a.Source))
			} else if msg := v.wrongOutput(c); msg != "" {
				wrong = append(wrong, msg)
			}
		case OutRejected:
			if msg := v.rejectedButRan(c); msg != "" {
				rejected = append(rejected, msg)
			}
		default:
			// Failed means nothing happened; so does any answer whose
			// text says so.
			if a.Outcome != OutFailed && !saysNothingDone(a.Text) {
				break
			}
			if e := v.effectBefore(c); e != nil {
				failed = append(failed, fmt.Sprintf("%s answered %s, told %q; effect %d by attempt %s", c.id, a.Status, clip(a.Text), e.ev.Effect, e.ev.Attempt))
			}
		}
	}
	var out []Violation
	for _, r := range []struct {
		rule, prefix string
		calls        []string
	}{
		{RuleNoEffect, "answered a success but no effect ever happened: ", noEffect},
		{RuleWrongOutput, "", wrong},
		{RuleFailed, "", failed},
		{RuleRejected, "", rejected},
		{RuleLost, "", v.lostOutcomes()},
		{RuleLeaseLost, "", leaseLost},
	} {
		if len(r.calls) > 0 {
			out = append(out, Violation{Rule: r.rule, Detail: r.prefix + strings.Join(r.calls, "; ")})
		}
	}
	return out
}

// rejectedButRan says which effect of the call's own flight happened
// although the call was told it was rejected and did not run; "" when
// none did.
func (v *intentView) rejectedButRan(c *callView) string {
	for _, e := range v.effects {
		// A flight carries one payload: the effect of another payload
		// under the same step key is another flight's.
		if e.ev.P == c.p && ofFlight(e.attempt, c) {
			return fmt.Sprintf("%s told %q; effect %d by attempt %s of its flight", c.id, clip(c.ans.Text), e.ev.Effect, e.ev.Attempt)
		}
	}
	return ""
}

// guardBypassed says which effect ran past the suppression guard, or "".
func (v *intentView) guardBypassed() string {
	if v.in.StepKey != "" || v.in.Payloads < 2 {
		return ""
	}
	for _, c := range v.calls {
		if c.ans == nil || c.ans.Outcome != OutSuppressed {
			continue
		}
		for _, e := range v.effects {
			if e.ev.P != c.p && e.attempt.start > c.end && !v.begunBefore(e, c.end) {
				return fmt.Sprintf("%s (payload %d) was answered suppressed; then effect %d of payload %d by attempt %s, begun after it",
					c.id, c.p, e.ev.Effect, e.ev.P, e.ev.Attempt)
			}
		}
	}
	return ""
}

// begunBefore reports whether effect e's attempt may belong to a call of
// its payload, in its process, that was made before t and still open when
// the attempt started. Such a call may have passed the journal's Begin
// before the suppression was recorded (a loaded machine runs a worker's
// issues late, together): the guard could not stop it, and the attempt's
// own start, logged once its tool runs, says nothing of when it began.
func (v *intentView) begunBefore(e effectView, t int64) bool {
	for _, o := range v.calls {
		if o.p == e.ev.P && o.proc == e.attempt.proc && o.start < t && o.end >= e.attempt.start {
			return true
		}
	}
	return false
}

// byKey splits effects into those of each key: one group, or one per
// payload when each payload is a key of its own.
func (v *intentView) byKey(effects []effectView) [][]effectView {
	if v.in.StepKey != "" || v.in.Payloads < 2 {
		return [][]effectView{effects}
	}
	groups := make([][]effectView, v.in.Payloads)
	for _, e := range effects {
		if e.ev.P >= 0 && e.ev.P < len(groups) {
			groups[e.ev.P] = append(groups[e.ev.P], e)
		}
	}
	return groups
}

// lateEffects returns the Unkeyed intent's effects that landed after their
// attempt's declared window.
func (v *intentView) lateEffects() []effectView {
	var late []effectView
	for _, e := range v.effects {
		if v.in.Kind == Unkeyed && e.attempt.quiet > 0 && e.ev.T > e.attempt.quiet {
			late = append(late, e)
		}
	}
	return late
}

// duplicates returns the effects that count towards RuleDuplicate: all but
// the late ones that no other effect's attempt began inside the window of
// (a harness may run again once the window has passed and the effect
// provably did not happen).
func (v *intentView) duplicates(late []effectView) []effectView {
	var out []effectView
	for _, e := range v.effects {
		excused := false
		if slices.ContainsFunc(late, func(l effectView) bool { return l.ev.Effect == e.ev.Effect }) {
			excused = true
			for _, o := range v.effects {
				if o.ev.Effect != e.ev.Effect && o.attempt != e.attempt && o.attempt.start < e.attempt.quiet {
					excused = false
				}
			}
		}
		if !excused {
			out = append(out, e)
		}
	}
	return out
}

// wrongOutput says what is wrong with a success answer's output, or "".
func (v *intentView) wrongOutput(c *callView) string {
	got := c.ans.Output
	if v.in.Kind == Idempotent {
		for _, e := range v.effects {
			if sameJSON(got, e.ev.Output) && e.ev.P == c.p {
				return ""
			}
		}
	} else {
		for _, own := range [][]effectView{v.effectsOf(c.p), v.truthfulOf(c.p)} {
			if len(own) > 0 && sameJSON(got, own[0].ev.Output) && own[0].ev.P == c.p {
				return ""
			}
		}
	}
	var o struct {
		P *int `json:"p"`
	}
	_ = json.Unmarshal(got, &o)
	if o.P != nil && *o.P != c.p {
		return fmt.Sprintf("%s (payload %d) answered %s with the output of payload %d: %s", c.id, c.p, c.ans.Source, *o.P, got)
	}
	if own := v.truthfulOf(c.p); len(own) > 0 {
		return fmt.Sprintf("%s answered %s with %s; the first effect's output is %s", c.id, c.ans.Source, got, own[0].ev.Output)
	}
	return fmt.Sprintf("%s answered %s with %s; its payload never had an effect", c.id, c.ans.Source, got)
}

// truthfulOf returns payload p's effects (effectsOf) without those that
// landed past their tool's declared window while no other attempt began
// inside it (RuleSettleBroken says so): the harness, told truthfully
// "did not happen" once the window had passed, ran again, and the run's
// output is an answer as true as the late one's. With nothing else, all
// of them.
func (v *intentView) truthfulOf(p int) []effectView {
	own := v.effectsOf(p)
	kept := v.duplicates(v.lateEffects())
	var out []effectView
	for _, e := range own {
		if slices.ContainsFunc(kept, func(k effectView) bool { return k.ev.Effect == e.ev.Effect && k.ev.P == e.ev.P }) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return own
	}
	return out
}

// effectsOf returns the effects that share payload p's key: all of the
// intent's, but only p's when each payload is a key of its own (several
// payloads, no StepKey).
func (v *intentView) effectsOf(p int) []effectView {
	if v.in.StepKey != "" || v.in.Payloads < 2 {
		return v.effects
	}
	var out []effectView
	for _, e := range v.effects {
		if e.ev.P == p {
			out = append(out, e)
		}
	}
	return out
}

// effectBefore returns an effect whose attempt began before call c did or
// ran in c's flight: an effect c's answer must not deny.
func (v *intentView) effectBefore(c *callView) *effectView {
	for i, e := range v.effects {
		if e.attempt.start < c.start || ofFlight(e.attempt, c) {
			return &v.effects[i]
		}
	}
	return nil
}

// lostOutcomes lists the calls that began after a success answer for the
// same payload and were not answered with a success.
func (v *intentView) lostOutcomes() []string {
	var lost []string
	for _, s := range v.calls {
		// Only a true success counts: a wrong answer is its own violation.
		if s.ans == nil || s.ans.Outcome != OutSucceeded || len(v.effects) == 0 || v.wrongOutput(s) != "" {
			continue
		}
		for _, c := range v.calls {
			if c.ans == nil || c.p != s.p || c.start <= s.end {
				continue
			}
			switch c.ans.Outcome {
			case OutUnknown, OutFailed, OutSuppressed, OutInProgress:
				lost = append(lost, fmt.Sprintf("%s answered %s after %s was answered %s", c.id, c.ans.Status, s.id, s.ans.Status))
			}
		}
		if len(lost) > 0 {
			return lost
		}
	}
	return lost
}

// knowable counts Unknown answers given after the downstream had committed
// an effect and delivered its answer to a client that was there.
func (v *intentView) knowable() int {
	n := 0
	for _, c := range v.calls {
		if c.ans == nil || c.ans.Outcome != OutUnknown {
			continue
		}
		for _, e := range v.effects {
			if t, ok := v.delivered[e.ev.Attempt]; ok && t < c.end {
				n++
				break
			}
		}
	}
	return n
}

// saysNothingDone reports whether a text for the model claims that nothing
// happened.
func saysNothingDone(text string) bool {
	return strings.Contains(text, "nothing was done") || strings.Contains(text, "did not run")
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// SortViolations orders violations by rule (as Rules lists them), then
// intent.
func SortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		if d := slices.Index(Rules, a.Rule) - slices.Index(Rules, b.Rule); d != 0 {
			return d
		}
		return strings.Compare(a.Intent, b.Intent)
	})
}
