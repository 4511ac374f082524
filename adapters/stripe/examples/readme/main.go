// Command readme charges a card through stripe-go from an agent's tool,
// and the answer is lost on its way back after Stripe made the charge (a
// local fake of Stripe's API loses it on purpose). agentonce does not run
// the charge again and does not leave it for a person: the tool's
// Reconcile hook finds the PaymentIntent by the call's key and the call is
// answered from it. Run it again: the journal answers, nothing is charged.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/stripe/stripe-go/v82"

	"github.com/agentonce/agentonce"
	agentstripe "github.com/agentonce/agentonce/adapters/stripe"
	"github.com/agentonce/agentonce/adapters/stripe/stripetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

type ChargeInput struct {
	Order string `json:"order"`
	Cents int64  `json:"cents"`
}

func main() {
	ctx := context.Background()
	api := stripetest.NewServer() // Stripe's API on loopback
	defer api.Close()
	api.LoseAnswer = func(key, try int) bool { return true } // every answer is lost after the charge
	sc := api.Client()                                       // for real: stripe.NewClient(os.Getenv("STRIPE_SECRET_KEY"))

	h, err := agentonce.Open(ctx, "agent.journal", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	charge := harness.Typed("charge_card", journal.Unkeyed, func(ctx context.Context, in ChargeInput) (agentstripe.Charge, error) {
		return agentstripe.Create(ctx, sc, &stripe.PaymentIntentCreateParams{ // the call's key goes with the charge
			Amount: stripe.Int64(in.Cents), Currency: stripe.String("usd"),
			PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true),
			Description: stripe.String("order " + in.Order),
		})
	})
	charge.Reconcile = (&agentstripe.Reconciler{Client: sc}).Reconcile // finds the charge by that key
	if err := h.Register(charge); err != nil {
		log.Fatal(err)
	}

	res := h.Call(ctx, harness.ToolCall{Session: "conversation-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"order":"A-1001","cents":4900}`)})
	fmt.Println(res.Status, res.Source, res.ForModel())
	fmt.Println("PaymentIntents made by this run:", len(api.PaymentIntents()))
}
