package stripe_test

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	stripego "github.com/stripe/stripe-go/v82"

	agentstripe "github.com/agentonce/agentonce/adapters/stripe"
	"github.com/agentonce/agentonce/adapters/stripe/stripetest"
	"github.com/agentonce/agentonce/harness/downstream"
)

// A charge whose answer was lost is found by its key; a key that charged
// nothing is proven absent.
func ExampleReconciler() {
	s := stripetest.NewServer() // a local fake of Stripe's API; a real client would use stripe.NewClient(key)
	defer s.Close()
	s.LoseAnswer = func(key, try int) bool { return true }
	sc := s.Client()

	key := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000001") // the harness gives a tool its call's key
	ctx := downstream.NewContext(context.Background(), downstream.Attempt{Key: key})
	_, err := agentstripe.Create(ctx, sc, &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(4900),
		Currency: stripego.String("usd"), PaymentMethod: stripego.String("pm_card_visa"), Confirm: stripego.Bool(true)})
	fmt.Println("the answer was lost:", err != nil)

	r := &agentstripe.Reconciler{Client: sc}
	out, ok := r.Reconcile(ctx, key, nil).Happened()
	fmt.Println(ok, string(out))
	fmt.Println(r.Reconcile(ctx, uuid.New(), nil).DidNotHappen())
	// Output:
	// the answer was lost: true
	// true {"payment_intent":"pi_fake000001","status":"succeeded","amount":4900,"currency":"usd"}
	// true
}

// Create is a charge tool's body: the call's key goes with the charge.
func ExampleCreate() {
	s := stripetest.NewServer()
	defer s.Close()
	key := uuid.MustParse("5a3c9a3e-0000-5000-8000-000000000001")
	ctx := downstream.NewContext(context.Background(), downstream.Attempt{Key: key})
	c, err := agentstripe.Create(ctx, s.Client(), &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(4900),
		Currency: stripego.String("usd"), PaymentMethod: stripego.String("pm_card_visa"), Confirm: stripego.Bool(true)})
	fmt.Printf("%+v %v\n", c, err)
	fmt.Println(s.PaymentIntents()[0].Metadata[agentstripe.MetadataKey])
	// Output:
	// {PaymentIntent:pi_fake000001 Status:succeeded Amount:4900 Currency:usd} <nil>
	// 5a3c9a3e-0000-5000-8000-000000000001
}
