package stripetest_test

import (
	"context"
	"fmt"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/agentonce/agentonce/adapters/stripe/stripetest"
)

// The server makes the charge and loses its answer; the same request again
// with the same Idempotency-Key is answered from what the server kept,
// without a second charge.
func ExampleServer() {
	s := stripetest.NewServer()
	defer s.Close()
	s.LoseAnswer = func(key, try int) bool { return try == 1 }
	sc := s.Client()

	params := &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(4900), Currency: stripego.String("usd"),
		PaymentMethod: stripego.String("pm_card_visa"), Confirm: stripego.Bool(true)}
	params.SetIdempotencyKey("order-A-1001")
	_, err := sc.V1PaymentIntents.Create(context.Background(), params)
	fmt.Println("first answer lost:", err != nil)
	pi, err := sc.V1PaymentIntents.Create(context.Background(), params)
	fmt.Println(pi.ID, pi.Status, err)
	fmt.Println("PaymentIntents:", len(s.PaymentIntents()), "creates:", s.Creates())
	// Output:
	// first answer lost: true
	// pi_fake000001 succeeded <nil>
	// PaymentIntents: 1 creates: 2
}
