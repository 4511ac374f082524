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
// Invariants checked:
//   - with live leases, at most one goroutine owns a key at a time, and
//     exactly one ever does;
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
	t.Logf("hammer: %d keys, %d takeovers, %d fenced writes, %d replays, %d in-flight answers",
		len(h.keys), h.takeovers.Load(), h.fenced.Load(), h.replays.Load(), h.inflight.Load())
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
	takeovers, fenced, replays, inflight atomic.Int64
}

// keyLog is what the goroutines saw happen to one key.
type keyLog struct {
	mu        sync.Mutex
	tokens    []uint64 // issued by Started and TakenOver
	winners   []uint64 // tokens whose Complete succeeded
	outputs   []string // Outputs of the successful Completes
	replays   []string // Outputs seen by Answered
	starts    int      // Started outcomes
	owners    atomic.Int32
	maxOwners atomic.Int32
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
	h.register(log, res)
	if moving && rng.IntN(3) == 0 {
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
		h.register(log, res2)
		h.work(ctx, log, key, rescue.Owner, res2.Token, rng, moving)
		return
	}
	h.work(ctx, log, key, owner, res.Token, rng, moving)
}

// register records a token issued to an owner.
func (h *hammer) register(log *keyLog, res journal.BeginResult) {
	log.mu.Lock()
	log.tokens = append(log.tokens, res.Token)
	if res.Outcome == journal.Started {
		log.starts++
	}
	log.mu.Unlock()
}

// work is an owner's attempt and outcome.
func (h *hammer) work(ctx context.Context, log *keyLog, key uuid.UUID, owner string, token uint64, rng *rand.Rand, moving bool) {
	n := log.owners.Add(1)
	for {
		m := log.maxOwners.Load()
		if n <= m || log.maxOwners.CompareAndSwap(m, n) {
			break
		}
	}
	defer log.owners.Add(-1)

	if rng.IntN(2) == 0 {
		err := h.s.StartAttempt(ctx, journal.AttemptRequest{
			Key: key, Token: token, ID: owner + "-2", PrevClass: "retryable", PrevError: "503",
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
