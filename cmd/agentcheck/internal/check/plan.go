package check

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/agentonce/agentonce/harness"
)

// Kind is a tool's effect kind in the plan's words; agent.go maps it to
// the harness's.
type Kind string

// The effect kinds.
const (
	Unkeyed    Kind = "unkeyed"
	Keyed      Kind = "keyed"
	Idempotent Kind = "idempotent"
	ReadOnly   Kind = "readonly"
)

// Reconcile behaviours of an Unkeyed tool's hook.
const (
	RecNone     = ""         // no hook
	RecTruthful = "truthful" // asks the downstream at once
	RecSlow     = "slow"     // asks the downstream after a pause
	RecCannot   = "cannot"   // cannot tell: returns an error
)

// ToolSpec is one tool the workers register.
type ToolSpec struct {
	Name      string `json:"name"`
	Kind      Kind   `json:"kind"`
	Reconcile string `json:"reconcile,omitempty"`
	// TimeoutMS is Tool.Timeout in milliseconds; 0 means none.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// SettleMS is Tool.Settle in milliseconds: how long the tool declares
	// its downstream may act after the client gave up; 0 means the
	// harness's default (harness.DefaultSettle).
	SettleMS int `json:"settle_ms,omitempty"`
	// Approvals is Tool.Approvals: how many distinct approvers must
	// approve a call before it runs; 0 means none.
	Approvals int `json:"approvals,omitempty"`
	// ApprovalTTLMS is Tool.ApprovalTTL in milliseconds: how long a call
	// awaits its approvals.
	ApprovalTTLMS int `json:"approval_ttl_ms,omitempty"`
}

// Downstream actions (Action.Do).
const (
	// ActOK waits DelayMS, commits the effect and answers 200. The wait
	// ignores the client: a client that hung up meanwhile still gets its
	// effect.
	ActOK = "ok"
	// ActLose commits after DelayMS and drops the connection unanswered.
	ActLose = "lose"
	// ActLate commits after DelayMS and answers 200 AfterMS later.
	ActLate = "late"
	// ActFailAfter commits after DelayMS and answers Code (a 5xx).
	ActFailAfter = "fail-after"
	// ActRefuse answers Code after DelayMS without acting (409, 417, 422,
	// 429 and 503 with Retry-After, 500, 502, 503, 504).
	ActRefuse = "refuse"
)

// Action is what the downstream does with one request of an intent.
type Action struct {
	Do      string `json:"do"`
	DelayMS int    `json:"delay_ms,omitempty"`
	AfterMS int    `json:"after_ms,omitempty"`
	Code    int    `json:"code,omitempty"`
	// RetryAfter adds Retry-After: 1 to a refusal.
	RetryAfter bool `json:"retry_after,omitempty"`
}

// String names the action for the history.
func (a Action) String() string {
	s := fmt.Sprintf("%s %dms", a.Do, a.DelayMS)
	if a.Code != 0 {
		s += fmt.Sprintf(" %d", a.Code)
	}
	if a.RetryAfter {
		s += " retry-after"
	}
	if a.AfterMS != 0 {
		s += fmt.Sprintf(" +%dms", a.AfterMS)
	}
	return s
}

// Issue is one moment at which a worker calls the harness for an intent.
type Issue struct {
	// Worker is the worker slot that makes the calls (PostgreSQL); with
	// bbolt the one worker makes every call.
	Worker int `json:"worker"`
	// AfterMS is the delay after the intent's At.
	AfterMS int `json:"after_ms"`
	// Payloads are issued at the same time, each as one call.
	Payloads []int `json:"payloads"`
	// Dup adds that many identical copies of each call (parallel
	// duplicates).
	Dup int `json:"dup,omitempty"`
	// All sends the calls in one CallAll (one model response's parallel
	// tool calls) instead of one goroutine each.
	All bool `json:"all,omitempty"`
	// CancelMS ends the callers' context that long after the calls start;
	// 0 means never.
	CancelMS int `json:"cancel_ms,omitempty"`
}

// Intent is one logical action: one journal key. It has one payload, or
// two under one StepKey (the same key with different inputs).
type Intent struct {
	ID       string `json:"id"`
	Tool     string `json:"tool"`
	Kind     Kind   `json:"kind"`
	Scenario string `json:"scenario"`
	// AtMS is when its first issue falls, after the plan's epoch.
	AtMS     int    `json:"at_ms"`
	StepKey  string `json:"step_key,omitempty"`
	Payloads int    `json:"payloads"`
	// Script holds the downstream's actions for its requests in arrival
	// order; requests past the end get DefaultAction.
	Script []Action `json:"script,omitempty"`
	Issues []Issue  `json:"issues"`
	// Decisions are what the approver does about an intent whose tool
	// needs approval, each at its time.
	Decisions []Decision `json:"decisions,omitempty"`
}

// Decisions an approver makes (Decision.Do).
const (
	// DoApprove approves the input the intent awaits with.
	DoApprove = "approve"
	// DoReject rejects the intent.
	DoReject = "reject"
	// DoForge approves, naming the fingerprint of another input of the
	// same tool: the journal must refuse it.
	DoForge = "forge"
)

// Decision is one approver's decision about an intent.
type Decision struct {
	// AfterMS is its time after the intent's At.
	AfterMS int    `json:"after_ms"`
	Do      string `json:"do"`
	// By names the approver.
	By string `json:"by"`
}

// DefaultAction answers requests past an intent's script.
var DefaultAction = Action{Do: ActOK, DelayMS: 5}

// Scenarios (Intent.Scenario): which situation an intent was made for.
const (
	ScMixed      = "mixed"         // random tool, script and issues
	ScLease      = "outlive-lease" // a tool slower than its lease, re-issued meanwhile
	ScHangup     = "hangup"        // the downstream acts after the client's timeout
	ScRefuse     = "refuse-retry"  // a maybe-executed attempt, then a 417 to the retry
	ScStepKey    = "stepkey"       // one StepKey, two payloads, at the same time
	ScCancel     = "cancel"        // the caller's context ends mid-flight
	ScDuplicates = "duplicates"    // parallel identical calls
	ScReadOnly   = "readonly"      // a ReadOnly tool under faults
	ScSkew       = "clock-ahead"   // a worker whose journal clock runs ahead calls during another's lease
	ScGuard      = "guard"         // a call refused with 422, then the same tool in the turn with another input
	ScApproval   = "approval"      // a tool that needs approval: approved, rejected, forged or left to expire, re-issued meanwhile
)

// Plan is a whole schedule, made by Generate from a seed and shared with
// the workers through a file.
type Plan struct {
	Seed  int64  `json:"seed"`
	Store string `json:"store"`
	// Workers is the number of worker slots running at once.
	Workers    int `json:"workers"`
	LeaseMS    int `json:"lease_ms"`
	DurationMS int `json:"duration_ms"`
	// Skews are the journal clock offsets of each worker slot, in ms.
	Skews   []int      `json:"skews_ms"`
	Tools   []ToolSpec `json:"tools"`
	Intents []Intent   `json:"intents"`
	// Epoch (Unix ns) and Downstream (a URL) are filled in by Run.
	Epoch      int64  `json:"epoch"`
	Downstream string `json:"downstream"`
}

// The tools every plan registers. hangTimeout is the short Tool.Timeout of
// the *_t tools.
const hangTimeout = 250

var planTools = []ToolSpec{
	{Name: "unkeyed", Kind: Unkeyed},
	{Name: "unkeyed_rec", Kind: Unkeyed, Reconcile: RecTruthful},
	{Name: "unkeyed_slowrec", Kind: Unkeyed, Reconcile: RecSlow},
	{Name: "unkeyed_cannot", Kind: Unkeyed, Reconcile: RecCannot},
	// The hang-up downstream acts up to 1.5 timeouts after the client gave
	// up (hangupScript), and the Unkeyed tools say so: a settle window of
	// two timeouts. A tool that declared less would be lying about its
	// downstream, which no harness can make up for.
	{Name: "unkeyed_t", Kind: Unkeyed, TimeoutMS: hangTimeout, SettleMS: 2 * hangTimeout},
	{Name: "unkeyed_rec_t", Kind: Unkeyed, Reconcile: RecTruthful, TimeoutMS: hangTimeout, SettleMS: 2 * hangTimeout},
	{Name: "keyed", Kind: Keyed},
	{Name: "keyed_t", Kind: Keyed, TimeoutMS: hangTimeout},
	{Name: "idempotent", Kind: Idempotent},
	{Name: "idempotent_t", Kind: Idempotent, TimeoutMS: hangTimeout},
	{Name: "readonly", Kind: ReadOnly},
}

// approvalTools need approval before they run: only the approval scenario
// calls them. They come after planTools, whose order the mixed scenario's
// draws depend on.
var approvalTools = []ToolSpec{
	{Name: "approve_unkeyed", Kind: Unkeyed, Reconcile: RecTruthful, Approvals: 1, ApprovalTTLMS: 1500},
	{Name: "approve_keyed", Kind: Keyed, Approvals: 2, ApprovalTTLMS: 2000},
}

// GenOptions are Generate's inputs besides the seed.
type GenOptions struct {
	Store    string
	Workers  int
	Duration time.Duration
	// Intents is the number of intents; zero means 10 per second of
	// Duration.
	Intents int
	// Lease is Options.LeaseTTL; zero means 500ms.
	Lease time.Duration
	// NoSkew keeps every worker's journal clock true.
	NoSkew bool
	// Scenarios restricts the intents to these scenarios; empty means
	// all. Unknown names are ignored.
	Scenarios []string
}

// Generate makes the plan for seed. The same seed and options give the
// same plan.
func Generate(seed int64, o GenOptions) *Plan {
	if o.Lease <= 0 {
		o.Lease = 500 * time.Millisecond
	}
	if o.Workers <= 0 || o.Store == "bolt" {
		o.Workers = 1
	}
	if o.Intents <= 0 {
		o.Intents = max(int(o.Duration/time.Second)*10, 20)
	}
	p := &Plan{Seed: seed, Store: o.Store, Workers: o.Workers, LeaseMS: int(o.Lease / time.Millisecond),
		DurationMS: int(o.Duration / time.Millisecond), Tools: slices.Concat(planTools, approvalTools)}
	p.Skews = make([]int, o.Workers)
	if o.Store == "postgres" && o.Workers > 1 && !o.NoSkew {
		// One worker's clock is far ahead, one a little behind: a live
		// lease must not look expired to the one ahead.
		p.Skews[1] = skewAhead
		if o.Workers > 2 {
			p.Skews[2] = -300
		}
	}
	g := &gen{rng: rand.New(rand.NewPCG(uint64(seed), 0x6167656e74636b)), lease: p.LeaseMS, workers: o.Workers, ahead: -1}
	for _, s := range scenarioWeights {
		if len(o.Scenarios) == 0 || slices.Contains(o.Scenarios, s.name) {
			g.weights = append(g.weights, s)
		}
	}
	if len(g.weights) == 0 {
		g.weights = scenarioWeights
	}
	for w, sk := range p.Skews {
		switch {
		case sk == 0:
			g.trueClock = append(g.trueClock, w)
		case sk == skewAhead:
			g.ahead = w
		}
	}
	// Issues fall in the first part of the run, so that every intent has
	// finished (or hung) before the final pass.
	span := max(p.DurationMS-3000, 1000)
	for i := range o.Intents {
		in := g.intent(i)
		in.AtMS = g.rng.IntN(span)
		p.Intents = append(p.Intents, in)
	}
	return p
}

// skewAhead is the journal clock offset (ms) of the worker that runs
// ahead.
const skewAhead = 90_000

type gen struct {
	rng     *rand.Rand
	lease   int
	workers int
	// trueClock lists the slots whose journal clock is not skewed; ahead
	// is the slot whose clock is far ahead, -1 if none.
	trueClock []int
	ahead     int
	// weights are the scenarios drawn from.
	weights []scenarioWeight
}

// twoTrue returns two slots with true clocks, distinct when there are
// two: a lease scenario must not depend on a skewed clock.
func (g *gen) twoTrue() (int, int) {
	a := g.trueClock[g.rng.IntN(len(g.trueClock))]
	if len(g.trueClock) == 1 {
		return a, g.otherNotAhead(a)
	}
	b := a
	for b == a {
		b = g.trueClock[g.rng.IntN(len(g.trueClock))]
	}
	return a, b
}

// otherNotAhead returns a slot other than w that does not run ahead, or w.
func (g *gen) otherNotAhead(w int) int {
	for range 16 {
		if o := g.other(w); o != g.ahead {
			return o
		}
	}
	return w
}

func (g *gen) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + g.rng.IntN(hi-lo+1)
}

func (g *gen) pick(names ...string) string { return names[g.rng.IntN(len(names))] }

func (g *gen) worker() int { return g.rng.IntN(g.workers) }

// other returns a worker slot other than w when there is one.
func (g *gen) other(w int) int {
	if g.workers == 1 {
		return w
	}
	return (w + 1 + g.rng.IntN(g.workers-1)) % g.workers
}

// scenario weights, relative.
type scenarioWeight struct {
	name string
	w    int
}

var scenarioWeights = []scenarioWeight{
	{ScMixed, 22}, {ScLease, 12}, {ScHangup, 10}, {ScRefuse, 10},
	{ScStepKey, 10}, {ScCancel, 10}, {ScDuplicates, 10}, {ScSkew, 6}, {ScReadOnly, 4}, {ScGuard, 5}, {ScApproval, 8},
}

func (g *gen) scenario(i int) string {
	// The first intents cover every scenario once, so that even a short
	// run meets each.
	if i < len(g.weights) {
		return g.weights[i].name
	}
	total := 0
	for _, s := range g.weights {
		total += s.w
	}
	n := g.rng.IntN(total)
	for _, s := range g.weights {
		if n < s.w {
			return s.name
		}
		n -= s.w
	}
	return g.weights[0].name
}

// Scenarios lists the scenario names, for -scenarios.
func Scenarios() []string {
	var names []string
	for _, s := range scenarioWeights {
		names = append(names, s.name)
	}
	return names
}

// toolSpec returns the spec of the tool named name; an unknown name is an
// Unkeyed tool without options.
func toolSpec(name string) ToolSpec {
	for _, t := range slices.Concat(planTools, approvalTools) {
		if t.Name == name {
			return t
		}
	}
	return ToolSpec{Name: name, Kind: Unkeyed}
}

func (g *gen) intent(i int) Intent {
	in := Intent{ID: fmt.Sprintf("i%04d", i), Scenario: g.scenario(i), Payloads: 1}
	if in.Scenario == ScSkew && g.ahead < 0 {
		in.Scenario = ScDuplicates
	}
	w := g.worker()
	one := func(after int) Issue { return Issue{Worker: w, AfterMS: after, Payloads: []int{0}} }
	switch in.Scenario {
	case ScLease:
		// Slower than the lease, with no Timeout to raise it; a second
		// caller comes after the lease ran out, while the first still runs.
		in.Tool = g.pick("unkeyed_rec", "unkeyed_rec", "unkeyed_slowrec", "keyed", "unkeyed", "idempotent")
		in.Script = []Action{{Do: ActOK, DelayMS: g.between(g.lease*18/10, g.lease*3)}}
		a, b := g.twoTrue()
		in.Issues = []Issue{{Worker: a, Payloads: []int{0}},
			{Worker: b, AfterMS: g.between(g.lease*11/10, g.lease*15/10), Payloads: []int{0}}}
	case ScSkew:
		// A worker whose clock runs ahead calls while another's lease is
		// live and its tool still runs.
		in.Tool = g.pick("unkeyed_rec", "unkeyed_slowrec", "keyed", "unkeyed_rec")
		in.Script = []Action{{Do: ActOK, DelayMS: g.between(g.lease/2, g.lease*9/10)}}
		a, _ := g.twoTrue()
		in.Issues = []Issue{{Worker: a, Payloads: []int{0}},
			{Worker: g.ahead, AfterMS: g.between(50, g.lease/4), Payloads: []int{0}}}
	case ScHangup:
		// Every request outlives the client's timeout; the downstream
		// still acts.
		in.Tool = g.pick("unkeyed_rec_t", "unkeyed_rec_t", "unkeyed_t", "keyed_t", "idempotent_t")
		for range 4 {
			in.Script = append(in.Script, Action{Do: ActOK, DelayMS: g.between(hangTimeout+60, hangTimeout*5/2)})
		}
		in.Issues = []Issue{one(0)}
	case ScRefuse:
		// The first attempt acts and its answer is lost or a 5xx; the
		// retry is refused with 417.
		in.Tool = g.pick("keyed", "keyed", "idempotent", "unkeyed_rec")
		first := Action{Do: ActFailAfter, DelayMS: g.between(5, 40), Code: []int{500, 502, 504}[g.rng.IntN(3)]}
		if g.rng.IntN(3) == 0 {
			first = Action{Do: ActLose, DelayMS: g.between(5, 40)}
		}
		in.Script = []Action{first, {Do: ActRefuse, DelayMS: 2, Code: 417}}
		in.Issues = []Issue{one(0)}
	case ScStepKey:
		in.Tool = g.pick("keyed", "unkeyed_rec", "idempotent", "unkeyed")
		in.StepKey = "step-" + in.ID
		in.Payloads = 2
		in.Script = []Action{{Do: ActOK, DelayMS: g.between(150, 400)}}
		is := Issue{Worker: w, Payloads: []int{0, 1}, All: g.rng.IntN(2) == 0}
		in.Issues = []Issue{is}
		if g.workers > 1 {
			later := Issue{Worker: g.other(w), AfterMS: g.between(20, 100), Payloads: []int{1}}
			in.Issues = append(in.Issues, later)
		}
	case ScCancel:
		in.Tool = g.pick("keyed", "unkeyed_rec", "unkeyed", "idempotent", "unkeyed_cannot")
		d := g.between(400, 900)
		in.Script = []Action{{Do: ActOK, DelayMS: d}}
		is := one(0)
		is.CancelMS = g.between(80, d/2)
		in.Issues = []Issue{is, one(d + g.between(200, 1200))}
	case ScDuplicates:
		in.Tool = g.pick("keyed", "unkeyed_rec", "unkeyed", "idempotent", "keyed_t", "unkeyed_slowrec")
		in.Script = []Action{g.action()}
		is := one(0)
		is.Dup = g.between(1, 3)
		is.All = g.rng.IntN(2) == 0
		in.Issues = []Issue{is}
		if g.workers > 1 {
			in.Issues = append(in.Issues, Issue{Worker: g.other(w), AfterMS: g.between(0, 30), Payloads: []int{0}, Dup: 1})
		}
	case ScGuard:
		// The downstream refuses the first input with 422 (suppressed:
		// the guard is armed for the turn); the model then asks the same
		// tool in the same turn with an altered input, another key, which
		// the guard must stop before it runs.
		in.Tool = g.pick("keyed", "unkeyed_rec", "keyed")
		in.Payloads = 2
		in.Script = []Action{{Do: ActRefuse, DelayMS: g.between(1, 20), Code: 422}}
		in.Issues = []Issue{one(0), {Worker: w, AfterMS: g.between(150, 400), Payloads: []int{1}}}
	case ScApproval:
		g.approval(&in)
	case ScReadOnly:
		in.Tool = "readonly"
		in.Script = []Action{{Do: ActRefuse, DelayMS: 3, Code: 503, RetryAfter: true}, g.action()}
		in.Issues = []Issue{one(0)}
	default:
		in.Tool = planTools[g.rng.IntN(len(planTools)-1)].Name
		for range g.between(1, 3) {
			in.Script = append(in.Script, g.action())
		}
		in.Issues = []Issue{one(0)}
		for range g.rng.IntN(3) {
			is := Issue{Worker: g.worker(), AfterMS: g.between(0, 2*g.lease), Payloads: []int{0}, Dup: g.rng.IntN(2)}
			in.Issues = append(in.Issues, is)
		}
	}
	in.Kind = toolSpec(in.Tool).Kind
	keepPromise(&in)
	return in
}

// keepPromise bounds the downstream's acting time by what an Unkeyed tool
// with a timeout declares (its start + Timeout + Settle): the checker
// holds the harness to the tool's word, and a downstream that broke it
// would be a lie no harness can see through.
func keepPromise(in *Intent) {
	for _, t := range planTools {
		if t.Name != in.Tool || t.Kind != Unkeyed || t.TimeoutMS == 0 {
			continue
		}
		settle := t.SettleMS
		if settle == 0 {
			settle = int(harness.DefaultSettle / time.Millisecond)
		}
		limit := t.TimeoutMS + settle - 50 // a margin for the scheduler
		for i := range in.Script {
			in.Script[i].DelayMS = min(in.Script[i].DelayMS, limit)
		}
	}
}

// delay draws a downstream duration around the lease: mostly short, some
// near it, a few beyond it.
func (g *gen) delay() int {
	switch n := g.rng.IntN(10); {
	case n < 6:
		return g.between(1, 50)
	case n < 9:
		return g.between(g.lease/2, g.lease*3/2)
	default:
		return g.between(g.lease*3/2, g.lease*3)
	}
}

// action draws one downstream action from everything the downstream can do.
func (g *gen) action() Action {
	d := g.delay()
	switch n := g.rng.IntN(20); {
	case n < 8:
		return Action{Do: ActOK, DelayMS: d}
	case n < 10:
		return Action{Do: ActLose, DelayMS: d}
	case n < 12:
		return Action{Do: ActLate, DelayMS: d, AfterMS: g.between(50, 2*g.lease)}
	case n < 14:
		return Action{Do: ActFailAfter, DelayMS: d, Code: []int{500, 502, 503, 504}[g.rng.IntN(4)]}
	default:
		r := Action{Do: ActRefuse, DelayMS: g.between(1, 30)}
		switch g.rng.IntN(9) {
		case 0:
			r.Code = 409
		case 1:
			r.Code = 422
		case 2:
			r.Code = 417
		case 3:
			r.Code, r.RetryAfter = 429, true
		case 4:
			r.Code, r.RetryAfter = 503, true
		default:
			r.Code = []int{500, 502, 503, 504}[g.rng.IntN(4)]
		}
		return r
	}
}

// WritePlan writes p to path as JSON.
func WritePlan(path string, p *Plan) error {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadPlan reads a plan written by WritePlan.
func ReadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return &p, nil
}

// intent returns the plan's intent with id, or nil.
func (p *Plan) intent(id string) *Intent {
	for i := range p.Intents {
		if p.Intents[i].ID == id {
			return &p.Intents[i]
		}
	}
	return nil
}
