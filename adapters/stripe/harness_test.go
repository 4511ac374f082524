package stripe_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	stripego "github.com/stripe/stripe-go/v82"

	agentstripe "github.com/agentonce/agentonce/adapters/stripe"
	"github.com/agentonce/agentonce/adapters/stripe/stripetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

type chargeInput struct {
	Order string `json:"order"`
	Cents int64  `json:"cents"`
	Card  string `json:"card,omitempty"` // a payment method; empty means pm_card_visa
}

// newHarness returns a Harness on a bbolt journal in t.TempDir() with an
// Unkeyed charge_card tool that charges s through sc and is reconciled by
// agentstripe.Reconciler; runs counts the tool's runs.
func newHarness(t *testing.T, s *stripetest.Server, sc *stripego.Client) (h *harness.Harness, runs *atomic.Int64) {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h = harness.New(store, &harness.Options{CheckWait: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { h.Close() })
	runs = new(atomic.Int64)
	tool := harness.Typed("charge_card", journal.Unkeyed, func(ctx context.Context, in chargeInput) (agentstripe.Charge, error) {
		runs.Add(1)
		return agentstripe.Create(ctx, sc, &stripego.PaymentIntentCreateParams{
			Amount: stripego.Int64(in.Cents), Currency: stripego.String("usd"),
			PaymentMethod: stripego.String(cmp.Or(in.Card, "pm_card_visa")), Confirm: stripego.Bool(true),
			Description: stripego.String("order " + in.Order),
		})
	})
	tool.Reconcile = (&agentstripe.Reconciler{Client: sc}).Reconcile
	tool.Settle = -1 // the fake has done the work before it loses the answer
	if err := h.Register(tool); err != nil {
		t.Fatal(err)
	}
	return h, runs
}

func charge(ctx context.Context, h *harness.Harness, i int) harness.Result {
	return h.Call(ctx, harness.ToolCall{Session: "conversation-1", Turn: fmt.Sprint(i), Tool: "charge_card",
		Input: json.RawMessage(fmt.Sprintf(`{"order":"A-%d","cents":%d}`, i, 1000+i))})
}

// With a third of Stripe's answers lost after the charge was made, every
// charge settles succeeded without a person: the lost ones are found by
// their key and answered from Stripe, none is made twice, and every
// answer is the charge's own. Also while the search index lags (the list
// finds them), and when Stripe has forgotten the keys, so that a wrong
// "did not happen" would be a second charge rather than a replay.
func TestLostAnswersSettleWithoutAPerson(t *testing.T) {
	const n = 30
	for _, tc := range []struct {
		name       string
		lag, prune bool
	}{{"search current", false, false}, {"search lagging", true, false}, {"search lagging, keys forgotten", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := stripetest.NewServer()
			defer s.Close()
			s.LoseAnswer = func(key, _ int) bool { return key%3 == 0 }
			s.ForgetKeys = tc.prune
			s.Lag(tc.lag)
			sc := s.Client()
			if tc.prune {
				// No connection is reused, so net/http never resends a
				// create whose answer was lost: with the keys forgotten
				// the resend would be a second charge, which Stripe, that
				// forgets a key only after 24 hours, never makes.
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.DisableKeepAlives = true
				sc = stripego.NewClient("sk_test_x", stripego.WithBackends(s.Backends(&http.Client{Transport: tr}, 0)))
			}
			h, runs := newHarness(t, s, sc)

			results := make([]harness.Result, n)
			var wg sync.WaitGroup
			for w := range 4 { // four conversations' worth at once
				wg.Go(func() {
					for i := w; i < n; i += 4 {
						results[i] = charge(t.Context(), h, i)
					}
				})
			}
			wg.Wait()
			sources := map[harness.Source]int{}
			for i, res := range results {
				if res.Status != harness.Succeeded {
					t.Fatalf("charge %d: %v %v: %v", i, res.Status, res.Source, res.Err)
				}
				sources[res.Source]++
			}
			if sources[harness.Reconciled] != n/3 || sources[harness.Executed] != n-n/3 {
				t.Errorf("sources %v; want %d reconciled (the lost answers), %d executed", sources, n/3, n-n/3)
			}
			if got := runs.Load(); got != n {
				t.Errorf("the tool ran %d times for %d charges; want no run again", got, n)
			}
			pis := s.PaymentIntents()
			if len(pis) != n {
				t.Errorf("Stripe holds %d PaymentIntents for %d charges", len(pis), n)
			}
			byKey := map[string]stripego.PaymentIntent{}
			for _, pi := range pis {
				byKey[pi.Metadata[agentstripe.MetadataKey]] = pi
			}
			if len(byKey) != len(pis) {
				t.Errorf("%d PaymentIntents carry %d distinct keys: a charge was duplicated", len(pis), len(byKey))
			}
			for i, res := range results {
				var got agentstripe.Charge
				if err := json.Unmarshal(res.Output, &got); err != nil {
					t.Fatalf("charge %d answered %s: %v", i, res.Output, err)
				}
				pi, ok := byKey[res.Key.String()]
				want := agentstripe.ChargeOf(&pi)
				if !ok || got != want || got.Amount != int64(1000+i) || got.Status != "succeeded" {
					t.Errorf("charge %d (%v) answered %+v; Stripe holds %+v (found: %v)", i, res.Source, got, want, ok)
				}
				if again := charge(t.Context(), h, i); again.Source != harness.Replayed || string(again.Output) != string(res.Output) {
					t.Errorf("charge %d asked again: %v %s; want replayed %s", i, again.Source, again.Output, res.Output)
				}
			}
		})
	}
}

// A charge that truly did not happen (Stripe's edge answered 503 before the
// API ran) is unknown at first; the reconcile proves it absent twice, and
// it runs again exactly once: one PaymentIntent, two create requests.
func TestChargeThatDidNotHappenRunsAgainOnce(t *testing.T) {
	s := stripetest.NewServer()
	defer s.Close()
	s.Unavailable = func(key, try int) bool { return key == 1 && try == 1 }
	h, runs := newHarness(t, s, s.Client())

	res := charge(t.Context(), h, 1)
	if res.Status != harness.Succeeded || res.Source != harness.Executed || res.Attempts != 2 {
		t.Fatalf("got %v %v after %d attempts (%v); want succeeded, executed, 2 attempts", res.Status, res.Source, res.Attempts, res.Err)
	}
	if runs.Load() != 2 || s.Creates() != 2 || len(s.PaymentIntents()) != 1 {
		t.Errorf("the tool ran %d times, Stripe got %d creates and holds %d PaymentIntents; want 2, 2, 1",
			runs.Load(), s.Creates(), len(s.PaymentIntents()))
	}
}

// A declined card is a definite failure, told to the model at once: Create
// passes Stripe's 402 on where the harness reads it, so the call is not
// left unknown (the declined PaymentIntent is not "succeeded", and a
// reconcile could not tell).
func TestDeclineIsAFailureNotAnUnknown(t *testing.T) {
	s := stripetest.NewServer()
	defer s.Close()
	h, runs := newHarness(t, s, s.Client())
	res := h.Call(t.Context(), harness.ToolCall{Session: "conversation-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"order":"A-1","cents":4900,"card":"` + stripetest.DeclinedCard + `"}`)})
	if res.Status != harness.Failed || res.Err == nil || !strings.Contains(res.Err.Error(), "card_declined") {
		t.Fatalf("got %v %v: %v; want failed with Stripe's card_declined", res.Status, res.Source, res.Err)
	}
	if runs.Load() != 1 || len(s.PaymentIntents()) != 1 {
		t.Errorf("the tool ran %d times and Stripe holds %d PaymentIntents; want 1, 1", runs.Load(), len(s.PaymentIntents()))
	}
}

// Error keeps the status and says what Stripe said, briefly.
func TestError(t *testing.T) {
	s := stripetest.NewServer()
	defer s.Close()
	ctx := downstream.NewContext(t.Context(), downstream.Attempt{Key: uuid.New()})
	_, err := agentstripe.Create(ctx, s.Client(), &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(4900),
		Currency: stripego.String("usd"), PaymentMethod: stripego.String(stripetest.DeclinedCard), Confirm: stripego.Bool(true)})
	var se *stripego.Error
	if err == nil || err.Error() != "stripe: card_error card_declined (HTTP 402): Your card was declined. (PaymentIntent pi_fake000001)" ||
		!errors.As(err, &se) || err.(interface{ StatusCode() int }).StatusCode() != 402 {
		t.Errorf("got %v (%T)", err, err)
	}
	if plain := errors.New("EOF"); agentstripe.Error(plain) != plain {
		t.Error("Error changed an error that is not Stripe's")
	}
}
