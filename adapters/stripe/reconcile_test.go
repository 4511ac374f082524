package stripe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	stripego "github.com/stripe/stripe-go/v82"

	agentstripe "github.com/agentonce/agentonce/adapters/stripe"
	"github.com/agentonce/agentonce/adapters/stripe/stripetest"
	"github.com/agentonce/agentonce/harness/downstream"
)

// chargeWith makes a PaymentIntent for key through Create, as a tool's
// attempt would, paid with pm.
func chargeWith(t *testing.T, sc *stripego.Client, key uuid.UUID, pm string) {
	t.Helper()
	ctx := downstream.NewContext(t.Context(), downstream.Attempt{Key: key, ID: "test#1"})
	_, _ = agentstripe.Create(ctx, sc, &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(4900), Currency: stripego.String("usd"),
		PaymentMethod: stripego.String(pm), Confirm: stripego.Bool(true)})
}

// verdict names a Reconciliation: "happened OUTPUT", "did not happen" or
// "cannot tell: WHY".
func verdict(r downstream.Reconciliation) string {
	if out, ok := r.Happened(); ok {
		return "happened " + string(out)
	}
	if r.DidNotHappen() {
		return "did not happen"
	}
	return "cannot tell: " + r.Why().Error()
}

func TestReconcilerAnswers(t *testing.T) {
	key := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000001")
	other := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000002")
	succeeded := `happened {"payment_intent":"pi_fake000001","status":"succeeded","amount":4900,"currency":"usd"}`
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *stripetest.Server, sc *stripego.Client)
		r     agentstripe.Reconciler
		want  string
	}{
		{"nothing made", func(*testing.T, *stripetest.Server, *stripego.Client) {}, agentstripe.Reconciler{}, "did not happen"},
		{"another key's charge only", func(t *testing.T, _ *stripetest.Server, sc *stripego.Client) {
			chargeWith(t, sc, other, "pm_card_visa")
		}, agentstripe.Reconciler{}, "did not happen"},
		{"found by search", func(t *testing.T, _ *stripetest.Server, sc *stripego.Client) {
			chargeWith(t, sc, key, "pm_card_visa")
		}, agentstripe.Reconciler{}, succeeded},
		{"search lagging, found in the recent list", func(t *testing.T, s *stripetest.Server, sc *stripego.Client) {
			s.Lag(true)
			chargeWith(t, sc, other, "pm_card_visa")
			chargeWith(t, sc, key, "pm_card_visa")
		}, agentstripe.Reconciler{}, strings.Replace(succeeded, "pi_fake000001", "pi_fake000002", 1)},
		{"declined", func(t *testing.T, _ *stripetest.Server, sc *stripego.Client) {
			chargeWith(t, sc, key, stripetest.DeclinedCard)
		}, agentstripe.Reconciler{}, "cannot tell: PaymentIntent pi_fake000001 for key " + key.String() + " is requires_payment_method, not succeeded"},
		{"two with one key", func(t *testing.T, s *stripetest.Server, sc *stripego.Client) {
			s.ForgetKeys = true
			chargeWith(t, sc, key, "pm_card_visa")
			chargeWith(t, sc, key, "pm_card_visa")
		}, agentstripe.Reconciler{}, "cannot tell: 2 PaymentIntents carry key " + key.String() + " (pi_fake000001, pi_fake000002): which one stands is for a person to decide"},
		{"more recent ones than MaxListed", func(t *testing.T, s *stripetest.Server, sc *stripego.Client) {
			s.Lag(true)
			s.ForgetKeys = true
			for range 4 {
				chargeWith(t, sc, other, "pm_card_visa")
			}
		}, agentstripe.Reconciler{MaxListed: 3}, "cannot tell: listing Stripe's recent PaymentIntents for key " + key.String() +
			": more than 3 PaymentIntents were created in the last 1h0m0s (Reconciler.MaxListed)"},
		{"older than SearchLag: the search is trusted", func(t *testing.T, s *stripetest.Server, sc *stripego.Client) {
			s.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
			chargeWith(t, sc, key, "pm_card_visa")
		}, agentstripe.Reconciler{}, succeeded},
		{"older than SearchLag and not indexed: the assumption broken", func(t *testing.T, s *stripetest.Server, sc *stripego.Client) {
			s.Lag(true)
			s.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
			chargeWith(t, sc, key, "pm_card_visa")
		}, agentstripe.Reconciler{}, "did not happen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stripetest.NewServer()
			defer s.Close()
			sc := s.Client()
			tc.setup(t, s, sc)
			r := tc.r
			r.Client = sc
			if got := verdict(r.Reconcile(t.Context(), key, nil)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Stripe unreachable, or a Reconciler without a client: cannot tell.
func TestReconcilerCannotReachStripe(t *testing.T) {
	s := stripetest.NewServer()
	sc := s.Client()
	s.Close()
	got := verdict((&agentstripe.Reconciler{Client: sc}).Reconcile(t.Context(), uuid.New(), nil))
	if !strings.HasPrefix(got, "cannot tell: searching Stripe's PaymentIntents for key") {
		t.Errorf("got %s", got)
	}
	if got := verdict((&agentstripe.Reconciler{}).Reconcile(t.Context(), uuid.New(), nil)); got != "cannot tell: stripe.Reconciler has no Client" {
		t.Errorf("got %s", got)
	}
}

// Carry refuses a context that is not a tool's, and metadata that names
// another key; it sends the key as the Idempotency-Key.
func TestCarry(t *testing.T) {
	key := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000001")
	params := &stripego.PaymentIntentCreateParams{}
	if err := agentstripe.Carry(context.Background(), params); err == nil || !strings.Contains(err.Error(), "no agentonce key") {
		t.Errorf("without a key: %v", err)
	}
	ctx := downstream.NewContext(context.Background(), downstream.Attempt{Key: key})
	params.Metadata = map[string]string{agentstripe.MetadataKey: "another"}
	if err := agentstripe.Carry(ctx, params); err == nil || !strings.Contains(err.Error(), `is "another", not the call's key`) {
		t.Errorf("another key in the metadata: %v", err)
	}
	params = &stripego.PaymentIntentCreateParams{}
	if err := agentstripe.Carry(ctx, params); err != nil || params.Metadata[agentstripe.MetadataKey] != key.String() ||
		params.IdempotencyKey == nil || *params.IdempotencyKey != key.String() {
		t.Errorf("Carry: %v, metadata %v, idempotency key %v", err, params.Metadata, params.IdempotencyKey)
	}
}
