package journaltest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// HammerOptions sizes a Hammer run. Zero fields mean the defaults given.
type HammerOptions struct {
	// Goroutines is how many callers race on every key; zero means 32.
	Goroutines int
	// Keys is how many keys each round creates; zero means 16.
	Keys int
	// Rounds is how many rounds run in each phase; zero means 3.
	Rounds int
}

// Hammer makes many goroutines begin, start attempts on and complete
// overlapping keys, in two phases: with the clock still (every lease stays
// live), then with the clock jumping past leases so that owners are taken
// over and fenced. clk must be the store's clock (Options.Now).
//
// Owners renew their leases (Store.Renew) while they work, and act as the
// owner of an Unkeyed intent would: each runs the intent's side effect
// (counted) only when no earlier attempt of the intent may have executed,
// that is on Started, or on TakenOver of a record whose every attempt was
// closed as not executed.
//
// Invariants checked:
//   - no two owners ever hold a live lease on one key at once: when Begin
//     issues a token, every earlier holder's lease, as its last Begin or
//     Renew reported it, has run out; and a Renew never succeeds for a
//     token older than one issued before the renewed lease's end;
//   - a Renew extends the lease to LeaseTTL from the store's now;
//   - with the clock still, exactly one goroutine ever owns a key;
//   - a key's side effect happens at most once (exactly once with the
//     clock still);
//   - every key ends with exactly one successful Complete, by the holder of
//     the highest token issued for it; every other Complete was fenced;
//   - tokens issued for a key are distinct;
//   - no outcome is lost: every key ends succeeded with its winner's output,
//     and every replay (Answered) saw that same output;
//   - no record is in two states: List by state yields each key once.
func Hammer(t *testing.T, s journal.Store, clk *Clock, opts HammerOptions) {
	if opts.Goroutines <= 0 {
		opts.Goroutines = 32
	}
	if opts.Keys <= 0 {
		opts.Keys = 16
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 3
	}
	h := &hammer{t: t, s: s, clk: clk, opts: opts, keys: map[uuid.UUID]*keyLog{}}
	for round := range opts.Rounds {
		h.round(fmt.Sprintf("still-%d", round), false)
	}
	for round := range opts.Rounds {
		h.round(fmt.Sprintf("moving-%d", round), true)
	}
	h.checkStates()
	t.Logf("hammer: %d keys, %d takeovers, %d fenced writes, %d replays, %d in-flight answers, %d renewals",
		len(h.keys), h.takeovers.Load(), h.fenced.Load(), h.replays.Load(), h.inflight.Load(), h.renewals.Load())
}

type hammer struct {
	t    *testing.T
	s    journal.Store
	clk  *Clock
	opts HammerOptions

	mu   sync.Mutex
	keys map[uuid.UUID]*keyLog // guarded by mu

	// What happened, for the log: a phase that saw no takeover tested
	// less than it meant to.
	takeovers, fenced, replays, inflight, renewals atomic.Int64
}

// keyLog is what the goroutines saw happen to one key.
type keyLog struct {
	mu        sync.Mutex
	tokens    []uint64 // issued by Started and TakenOver
	winners   []uint64 // tokens whose Complete succeeded
	outputs   []string // Outputs of the successful Completes
	replays   []string // Outputs seen by Answered
	starts    int      // Started outcomes
	holders   []holder // every owner Begin gave the key to
	effects   int      // side effects run by owners
	owners    atomic.Int32
	maxOwners atomic.Int32
}

// holder is one owner of a key as the hammer saw it: the lease's end as
// its last Begin or Renew reported it, and the clock when Begin returned
// (at or after the store's now for that Begin).
type holder struct {
	token   uint64
	expires time.Time
	since   time.Time
}

func (h *hammer) round(name string, moving bool) {
	ctx := context.Background()
	keys := make([]uuid.UUID, h.opts.Keys)
	logs := make([]*keyLog, len(keys))
	for i := range keys {
		keys[i] = uuid.New()
		logs[i] = &keyLog{}
	}
	h.mu.Lock()
	for i, k := range keys {
		h.keys[k] = logs[i]
	}
	h.mu.Unlock()

	var ops atomic.Int64
	var wg sync.WaitGroup
	for g := range h.opts.Goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), uint64(len(name))))
			owner := fmt.Sprintf("%s-g%d", name, g)
			order := rng.Perm(len(keys))
			for _, i := range order {
				key, log := keys[i], logs[i]
				if moving && ops.Add(1)%7 == 0 {
					h.clk.Advance(leaseTTL)
				}
				req := journal.BeginRequest{
					Key:         key,
					Intent:      intent("hammer", name, "1"),
					Fingerprint: fp(1),
					Effect:      journal.Keyed,
					Owner:       owner,
					AttemptID:   owner + "-1",
					LeaseTTL:    leaseTTL,
					Durable:     rng.IntN(2) == 0,
					Guard:       journal.GuardOff,
				}
				res, err := h.s.Begin(ctx, req)
				if err != nil {
					h.t.Errorf("%s: Begin(%s) error: %v", owner, key, err)
					return
				}
				switch res.Outcome {
				case journal.Started, journal.TakenOver:
					if res.Outcome == journal.TakenOver {
						h.takeovers.Add(1)
					}
					h.own(ctx, log, key, owner, res, rng, moving)
				case journal.Answered:
					if res.Record.State != journal.StateSucceeded {
						h.t.Errorf("%s: Begin(%s) Answered in state %s; want succeeded", owner, key, res.Record.State)
					}
					log.mu.Lock()
					log.replays = append(log.replays, string(res.Record.Output))
					log.mu.Unlock()
					h.replays.Add(1)
				case journal.Held:
					h.inflight.Add(1)
					if res.Record.State != journal.StatePending {
						h.t.Errorf("%s: Begin(%s) Held in state %s; want pending", owner, key, res.Record.State)
					}
				default:
					h.t.Errorf("%s: Begin(%s) = %s; want Started, TakenOver, Answered or Held", owner, key, outcomeName(res.Outcome))
				}
			}
		})
	}
	wg.Wait()

	for i, key := range keys {
		h.checkKey(name, key, logs[i], moving)
	}
}

// own runs an owner's work: maybe a second attempt, then Complete. In the
// moving phase a third of the owners stall past their lease first; the
// stalled owner then begins its own key again under another name, which must
// take it over (or find that someone else did), and its late Complete must
// be fenced.
func (h *hammer) own(ctx context.Context, log *keyLog, key uuid.UUID, owner string, res journal.BeginResult, rng *rand.Rand, moving bool) {
	o := h.register(log, key, owner, res)
	if moving && rng.IntN(3) == 0 {
		// Half the stalled owners ran the effect before they stalled:
		// whoever takes the key over must not run it again.
		if rng.IntN(2) == 0 {
			h.effect(log, &o)
		}
		h.clk.Advance(leaseTTL)
		rescue := journal.BeginRequest{
			Key: key, Intent: res.Record.Intent, Fingerprint: fp(1), Effect: journal.Keyed,
			Owner: owner + "-rescue", AttemptID: owner + "-rescue-1", LeaseTTL: leaseTTL,
			Durable: rng.IntN(2) == 0, Guard: journal.GuardOff,
		}
		res2, err := h.s.Begin(ctx, rescue)
		if err != nil {
			h.t.Errorf("%s: Begin(%s) error: %v", rescue.Owner, key, err)
			return
		}
		switch res2.Outcome {
		case journal.TakenOver, journal.Held, journal.Answered:
		default:
			h.t.Errorf("%s: Begin(%s) of a key whose lease expired = %s; want TakenOver, Held or Answered", rescue.Owner, key, outcomeName(res2.Outcome))
			return
		}
		// Someone (the rescuer or another goroutine) owns the key now: the
		// stalled owner is fenced.
		_, err = h.s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: []byte("stale")})
		if !errors.Is(err, journal.ErrFenced) {
			h.t.Errorf("%s: Complete(%s) with token %d after %s: %v; want ErrFenced", owner, key, res.Token, outcomeName(res2.Outcome), err)
		}
		h.fenced.Add(1)
		if res2.Outcome != journal.TakenOver {
			return
		}
		h.takeovers.Add(1)
		o2 := h.register(log, key, rescue.Owner, res2)
		h.work(ctx, log, key, &o2, rng, moving)
		return
	}
	h.work(ctx, log, key, &o, rng, moving)
}

// ownership is what an owner knows about the key it owns.
type ownership struct {
	owner string
	token uint64
	// mayRun says no earlier attempt may have executed, so the owner may
	// run the side effect; ran says it did.
	mayRun, ran bool
	// own says the open attempt is the owner's own (not an attempt of an
	// earlier owner that it took over).
	own bool
}

// effect runs the key's side effect once for o, if o may.
func (h *hammer) effect(log *keyLog, o *ownership) {
	if !o.mayRun || o.ran {
		return
	}
	o.ran = true
	log.mu.Lock()
	log.effects++
	log.mu.Unlock()
}

// register records a token issued to an owner and checks that no earlier
// holder's lease was still live when Begin issued it.
func (h *hammer) register(log *keyLog, key uuid.UUID, owner string, res journal.BeginResult) ownership {
	since := h.clk.Now()
	o := ownership{owner: owner, token: res.Token, own: res.Outcome == journal.Started}
	o.mayRun = o.own || notExecuted(res.Record.Attempts)
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, p := range log.holders {
		if p.token < res.Token && p.expires.After(since) {
			h.t.Errorf("%s: Begin(%s) = %s with token %d at %s while token %d's lease is live until %s: two owners at once",
				owner, key, outcomeName(res.Outcome), res.Token, since.Format(time.StampMilli), p.token, p.expires.Format(time.StampMilli))
		}
	}
	log.holders = append(log.holders, holder{token: res.Token, expires: res.Record.Lease.Expires, since: since})
	log.tokens = append(log.tokens, res.Token)
	if res.Outcome == journal.Started {
		log.starts++
	}
	return o
}

// notExecuted reports whether every attempt was closed as provably not
// executed: only then may a new owner of an Unkeyed intent run it.
func notExecuted(attempts []journal.Attempt) bool {
	for _, a := range attempts {
		if a.Class != "not-executed" {
			return false
		}
	}
	return true
}

// renew renews o's lease and checks what the store says against what the
// hammer saw. It reports whether o still owns the key.
func (h *hammer) renew(ctx context.Context, log *keyLog, key uuid.UUID, o *ownership, moving bool) bool {
	before := h.clk.Now()
	expires, err := h.s.Renew(ctx, journal.RenewRequest{Key: key, Token: o.token, LeaseTTL: leaseTTL})
	switch {
	case errors.Is(err, journal.ErrFenced) && moving:
		h.fenced.Add(1)
		return false
	case err != nil:
		h.t.Errorf("%s: Renew(%s, token %d) error: %v", o.owner, key, o.token, err)
		return false
	}
	h.renewals.Add(1)
	if want := before.Add(leaseTTL); expires.Before(want) {
		h.t.Errorf("%s: Renew(%s, token %d) = lease until %s; want at least %s (LeaseTTL from now)",
			o.owner, key, o.token, expires.Format(time.StampMilli), want.Format(time.StampMilli))
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for i, p := range log.holders {
		switch {
		case p.token == o.token:
			log.holders[i].expires = expires
		case p.token > o.token && expires.After(p.since):
			h.t.Errorf("%s: Renew(%s, token %d) succeeded, lease until %s, but token %d was issued at %s: two owners at once",
				o.owner, key, o.token, expires.Format(time.StampMilli), p.token, p.since.Format(time.StampMilli))
		}
	}
	return true
}

// work is an owner's attempt, its renewals and outcome.
func (h *hammer) work(ctx context.Context, log *keyLog, key uuid.UUID, o *ownership, rng *rand.Rand, moving bool) {
	owner, token := o.owner, o.token
	n := log.owners.Add(1)
	for {
		m := log.maxOwners.Load()
		if n <= m || log.maxOwners.CompareAndSwap(m, n) {
			break
		}
	}
	defer log.owners.Add(-1)

	if !h.renew(ctx, log, key, o, moving) {
		return
	}
	if rng.IntN(2) == 0 || (o.mayRun && !o.own) {
		// A second attempt. Closing an attempt as not executed is true
		// only of the owner's own attempt before its effect ran: that one
		// was refused before it was sent.
		prev, msg := "maybe-executed", "timeout"
		if o.own && !o.ran {
			prev, msg = "not-executed", "connection refused"
		}
		err := h.s.StartAttempt(ctx, journal.AttemptRequest{
			Key: key, Token: token, ID: owner + "-2", PrevClass: prev, PrevError: msg,
			LeaseTTL: leaseTTL, Durable: rng.IntN(2) == 0,
		})
		if errors.Is(err, journal.ErrFenced) && moving {
			h.fenced.Add(1)
			return
		}
		if err != nil {
			h.t.Errorf("%s: StartAttempt(%s, token %d) error: %v", owner, key, token, err)
			return
		}
		o.own = true
	}
	h.effect(log, o)
	if rng.IntN(2) == 0 && !h.renew(ctx, log, key, o, moving) {
		return
	}
	out := fmt.Sprintf("%s by %s token %d", key, owner, token)
	_, err := h.s.Complete(ctx, journal.Completion{Key: key, Token: token, State: journal.StateSucceeded, Output: []byte(out)})
	switch {
	case err == nil:
		log.mu.Lock()
		log.winners = append(log.winners, token)
		log.outputs = append(log.outputs, out)
		log.mu.Unlock()
	case errors.Is(err, journal.ErrFenced) && moving:
		h.fenced.Add(1)
	default:
		h.t.Errorf("%s: Complete(%s, token %d) error: %v", owner, key, token, err)
	}
}

func (h *hammer) checkKey(round string, key uuid.UUID, log *keyLog, moving bool) {
	t := h.t
	t.Helper()
	if len(log.winners) != 1 {
		t.Errorf("%s: key %s: %d successful Completes (tokens %v); want exactly 1", round, key, len(log.winners), log.winners)
		return
	}
	if log.starts != 1 {
		t.Errorf("%s: key %s: %d Started outcomes; want exactly 1", round, key, log.starts)
	}
	if log.effects > 1 || (!moving && log.effects != 1) {
		t.Errorf("%s: key %s: side effects = %d; want %s", round, key, log.effects, map[bool]string{false: "exactly 1", true: "at most 1"}[moving])
	}
	sorted := slices.Clone(log.tokens)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(log.tokens) {
		t.Errorf("%s: key %s: tokens issued twice: %v", round, key, log.tokens)
	}
	if max := slices.Max(log.tokens); log.winners[0] != max {
		t.Errorf("%s: key %s: Complete succeeded with token %d but token %d was issued", round, key, log.winners[0], max)
	}
	if !moving {
		if m := log.maxOwners.Load(); m != 1 || len(log.tokens) != 1 {
			t.Errorf("%s: key %s: %d owners at once, %d in all, with live leases; want 1", round, key, m, len(log.tokens))
		}
	}
	r, err := h.s.Get(context.Background(), key)
	if err != nil {
		t.Errorf("%s: Get(%s) error: %v", round, key, err)
		return
	}
	if r.State != journal.StateSucceeded || string(r.Output) != log.outputs[0] || r.Lease.Token != log.winners[0] {
		t.Errorf("%s: Get(%s) = %s %q token %d; want succeeded %q token %d", round, key, r.State, r.Output, r.Lease.Token, log.outputs[0], log.winners[0])
	}
	for _, rep := range log.replays {
		if rep != log.outputs[0] {
			t.Errorf("%s: key %s: a replay answered %q; want %q", round, key, rep, log.outputs[0])
		}
	}
}

// checkStates lists the records of every state and checks that each key
// appears exactly once, in state succeeded.
func (h *hammer) checkStates() {
	seen := map[uuid.UUID]journal.State{}
	for st := journal.StatePending; st <= journal.StateUnknown; st++ {
		for r, err := range h.s.List(context.Background(), journal.Filter{State: st, Tool: "hammer"}) {
			if err != nil {
				h.t.Fatalf("List(state %s) error: %v", st, err)
			}
			if prev, ok := seen[r.Key]; ok {
				h.t.Errorf("key %s listed as %s and as %s", r.Key, prev, st)
			}
			seen[r.Key] = st
		}
	}
	for key := range h.keys {
		if st, ok := seen[key]; !ok || st != journal.StateSucceeded {
			h.t.Errorf("key %s listed as %v (listed: %v); want succeeded", key, st, ok)
		}
	}
	if len(seen) != len(h.keys) {
		t := h.t
		t.Errorf("List by state yields %d hammer records; want %d", len(seen), len(h.keys))
	}
}
