package mcpcall_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/mcpcall"
)

// newHarness is a Harness on a memory journal with one Unkeyed charge tool
// that counts its runs.
func newHarness(t *testing.T, store journal.Store, runs *atomic.Int64) *harness.Harness {
	t.Helper()
	h := harness.New(store, nil)
	err := h.Register(harness.Tool{Name: "charge", Effect: journal.Unkeyed,
		Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"note":{"type":"string","default":""}}}`),
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(map[string]int64{"charge": runs.Add(1)})
		}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func call(t *testing.T, h *harness.Harness, r *mcpcall.Resolver, id *mcpcall.Identity, args string) (mcpcall.Call, harness.Result) {
	t.Helper()
	c, err := r.Resolve(context.Background(), mcpcall.Request{Tool: "charge", Arguments: json.RawMessage(args), Identity: id})
	if err != nil {
		t.Fatalf("Resolve(%s): %v", args, err)
	}
	return c, h.Call(context.Background(), c.ToolCall)
}

// Identical calls without scope inside the window are one intent, across a
// window boundary and across a restart (a new Resolver on the same
// journal); after the window, or with RepeatArgument, or from another
// principal, they are new intents. The answer of a repeat tells the model
// so and how to repeat on purpose.
func TestWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int64
		store := memory.New(nil)
		h := newHarness(t, store, &runs)
		defer h.Close()
		r := mcpcall.NewResolver(h, &mcpcall.Options{Window: time.Minute})
		alice := &mcpcall.Identity{Tenant: "acme", Principal: "alice"}

		// Start 10 s before a window boundary.
		now := time.Now()
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute - 10*time.Second).Sub(now))
		c1, res1 := call(t, h, r, alice, `{"amount":5}`)
		if res1.Source != harness.Executed {
			t.Fatalf("first call: source %v; want executed", res1.Source)
		}
		time.Sleep(20 * time.Second) // past the boundary, inside the window
		c2, res2 := call(t, h, r, alice, `{"note":"","amount":5}`)
		if res2.Source != harness.Replayed || c2.StepKey != c1.StepKey {
			t.Errorf("repeat across the boundary: source %v, window %q then %q; want replayed, one window", res2.Source, c1.WindowLabel, c2.WindowLabel)
		}
		a := mcpcall.AnswerOf(res2, c2)
		if !strings.Contains(a.Text, mcpcall.RepeatArgument) || !strings.Contains(a.Text, `"charge":1`) {
			t.Errorf("repeat's text = %q; want the first outcome and how to repeat", a.Text)
		}
		if a := mcpcall.AnswerOf(res1, c1); strings.Contains(a.Text, "Note") {
			t.Errorf("first call's text = %q; want the output alone", a.Text)
		}

		// A restart: a new Resolver finds the first call in the journal.
		r2 := mcpcall.NewResolver(h, &mcpcall.Options{Window: time.Minute})
		time.Sleep(20 * time.Second)
		if _, res := call(t, h, r2, alice, `{"amount":5}`); res.Source != harness.Replayed {
			t.Errorf("repeat after a restart: source %v; want replayed", res.Source)
		}
		if _, res := call(t, h, r2, &mcpcall.Identity{Tenant: "acme", Principal: "bob"}, `{"amount":5}`); res.Source != harness.Executed {
			t.Errorf("another principal: source %v; want executed", res.Source)
		}
		if _, res := call(t, h, r2, alice, `{"amount":5,"agentonce_repeat":"2"}`); res.Source != harness.Executed {
			t.Errorf("a deliberate repeat: source %v; want executed", res.Source)
		}
		time.Sleep(time.Minute)
		if _, res := call(t, h, r2, alice, `{"amount":5}`); res.Source != harness.Executed {
			t.Errorf("after the window: source %v; want executed", res.Source)
		}
		if n := runs.Load(); n != 4 {
			t.Errorf("charges = %d; want 4", n)
		}
	})
}

// A client's session and turn are scoped under its principal: two users of
// one tenant naming the same session and turn are two intents.
func TestScopeUnderPrincipal(t *testing.T) {
	var runs atomic.Int64
	h := newHarness(t, memory.New(nil), &runs)
	defer h.Close()
	r := mcpcall.NewResolver(h, nil)
	meta := map[string]any{mcpcall.MetaSession: "s", mcpcall.MetaTurn: "1", mcpcall.MetaTenant: "other"}
	keys := map[string]bool{}
	for _, id := range []*mcpcall.Identity{{Tenant: "acme", Principal: "alice"}, {Tenant: "acme", Principal: "bob"}, {Tenant: "beta", Principal: "alice"}} {
		c, err := r.Resolve(context.Background(), mcpcall.Request{Tool: "charge", Meta: meta, Arguments: json.RawMessage(`{"amount":1}`), Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tenant != id.Tenant {
			t.Errorf("tenant = %q; want %q from the identity", c.Tenant, id.Tenant)
		}
		res := h.Call(context.Background(), c.ToolCall)
		if res.Source != harness.Executed {
			t.Errorf("%v: source %v; want executed", id, res.Source)
		}
		keys[res.Key.String()] = true
	}
	if len(keys) != 3 || runs.Load() != 3 {
		t.Errorf("keys %d, charges %d; want 3 and 3", len(keys), runs.Load())
	}
	if _, err := r.Resolve(context.Background(), mcpcall.Request{Tool: "charge", Identity: &mcpcall.Identity{Tenant: "acme"}}); err == nil {
		t.Errorf("Resolve with no principal = nil error")
	}
	if _, err := r.Resolve(context.Background(), mcpcall.Request{Tool: "charge", Meta: map[string]any{mcpcall.MetaTurn: "1"}}); err == nil ||
		!strings.Contains(err.Error(), mcpcall.MetaSession) {
		t.Errorf("Resolve with a turn and no session = %v; want an error naming %s", err, mcpcall.MetaSession)
	}
}

func TestHints(t *testing.T) {
	for _, e := range []journal.Effect{journal.ReadOnly, journal.Idempotent, journal.Keyed, journal.Unkeyed} {
		h := mcpcall.HintsOf(e)
		want := e
		if e == journal.Keyed {
			want = journal.Idempotent // without MetaDedupes, a Keyed tool reads as idempotent
		}
		if got := mcpcall.EffectOf(h, false); got != want {
			t.Errorf("EffectOf(HintsOf(%v), false) = %v; want %v", e, got, want)
		}
	}
	if got := mcpcall.EffectOf(mcpcall.Hints{}, true); got != journal.Keyed {
		t.Errorf("EffectOf(no hints, dedupes) = %v; want keyed", got)
	}
	if got := mcpcall.EffectOf(mcpcall.Hints{}, false); got != journal.Unkeyed {
		t.Errorf("EffectOf(no hints) = %v; want unkeyed", got)
	}
}
