package check

// This file plans the approval scenario: an intent of a tool that needs
// approval, what the approver decides and when, and the calls that issue
// it before, at and after the decisions.

// Approvers' names. Forger names another input than the one awaiting.
var approvers = []string{"ann", "bob", "carol"}

const forger = "mallory"

// Fates of an approval intent: what the approver does about it.
const (
	fateApprove = "approve" // every approval it needs, in time
	fateRace    = "race"    // the last approval and a rejection at the same moment
	fateLate    = "late"    // the approvals, after the deadline
	fateReject  = "reject"  // a rejection (after one approval, when two are needed)
	fateExpire  = "expire"  // fewer approvals than needed, or none
)

// approval fills in an intent of the approval scenario: a tool that needs
// approval, a fate drawn at random and the decisions it makes, sometimes
// a forged approval, and issues before, at the moment of and after the
// decisions, from two workers whose journal clocks are not ahead (the
// deadline is the journal's clock's).
func (g *gen) approval(in *Intent) {
	in.Tool = g.pick("approve_unkeyed", "approve_keyed", "approve_keyed")
	spec := toolSpec(in.Tool)
	ttl := spec.ApprovalTTLMS
	in.Script = []Action{g.approvalAction()}
	names := append([]string(nil), approvers...)
	g.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	approve := func(n, lo, hi int) {
		for i := range n {
			in.Decisions = append(in.Decisions, Decision{AfterMS: g.between(lo, hi), Do: DoApprove, By: names[i]})
		}
	}
	fate := []string{fateApprove, fateApprove, fateApprove, fateRace, fateLate, fateReject, fateReject, fateExpire}[g.rng.IntN(8)]
	switch fate {
	case fateApprove:
		approve(spec.Approvals, 100, ttl-300)
	case fateRace:
		approve(spec.Approvals, 100, ttl/2)
		last := &in.Decisions[len(in.Decisions)-1]
		last.AfterMS = ttl / 2
		in.Decisions = append(in.Decisions, Decision{AfterMS: ttl / 2, Do: DoReject, By: names[len(names)-1]})
	case fateLate:
		approve(spec.Approvals, ttl+150, ttl+500)
	case fateReject:
		approve(spec.Approvals-1, 100, ttl/2)
		in.Decisions = append(in.Decisions, Decision{AfterMS: g.between(150, ttl-200), Do: DoReject, By: names[len(names)-1]})
	case fateExpire:
		approve(g.rng.IntN(spec.Approvals), 100, ttl-300)
	}
	if g.rng.IntN(3) == 0 {
		in.Decisions = append(in.Decisions, Decision{AfterMS: g.between(100, ttl+200), Do: DoForge, By: forger})
	}
	// The re-issues come right after the last decision, from both
	// workers at once, and once more at a random time.
	last := ttl / 2
	for _, d := range in.Decisions {
		last = max(last, d.AfterMS)
	}
	a := g.trueClock[g.rng.IntN(len(g.trueClock))]
	b := g.otherNotAhead(a)
	at := last + g.between(0, 150)
	in.Issues = []Issue{
		{Worker: a, Payloads: []int{0}, Dup: g.rng.IntN(2)},
		{Worker: a, AfterMS: at, Payloads: []int{0}, Dup: 1, All: g.rng.IntN(2) == 0},
		{Worker: b, AfterMS: at, Payloads: []int{0}, Dup: 1},
		{Worker: b, AfterMS: g.between(200, ttl+800), Payloads: []int{0}},
	}
}

// approvalAction draws the downstream's action for an approved intent:
// what the downstream can do but refuse with 422, so that the only
// suppressions of an approval intent are the approver's and the deadline's.
func (g *gen) approvalAction() Action {
	a := g.action()
	if a.Code == 422 {
		a.Code, a.RetryAfter = 503, true
	}
	return a
}
