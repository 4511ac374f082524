package stripe

import (
	"context"
	"errors"
	"fmt"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/agentonce/agentonce/harness/downstream"
)

// MetadataKey is the PaymentIntent metadata entry that holds the agentonce
// key of the call that made it; Reconciler looks a PaymentIntent up by it.
const MetadataKey = "agentonce_key"

// Charge is a charge tool's answer: what Create returns and what
// Reconciler answers for a PaymentIntent found later, so that a settled
// call and a replayed one read the same.
type Charge struct {
	PaymentIntent string `json:"payment_intent"`
	Status        string `json:"status"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
}

// ChargeOf is the Charge that pi is.
func ChargeOf(pi *stripego.PaymentIntent) Charge {
	return Charge{PaymentIntent: pi.ID, Status: string(pi.Status), Amount: pi.Amount, Currency: string(pi.Currency)}
}

// Carry puts the key of the call whose tool runs with ctx on params: in
// params.Metadata[MetadataKey], where Reconciler finds it, and as the
// request's Idempotency-Key, so that a request stripe-go or net/http sends
// again is not a second charge. A context without a key (not a tool's) is
// an error: a charge that cannot be found again must not be made.
//
// The attempt id (downstream.AttemptFromContext) is deliberately not sent:
// Stripe refuses a key used again with other parameters, so everything in
// params must be the same on every attempt of the intent.
func Carry(ctx context.Context, params *stripego.PaymentIntentCreateParams) error {
	key, ok := downstream.KeyFromContext(ctx)
	if !ok {
		return errors.New("stripe.Carry: the context carries no agentonce key (call it with the tool's context)")
	}
	if params.Metadata == nil {
		params.Metadata = map[string]string{}
	}
	if v, ok := params.Metadata[MetadataKey]; ok && v != key.String() {
		return fmt.Errorf("stripe.Carry: params.Metadata[%q] is %q, not the call's key %s", MetadataKey, v, key)
	}
	params.Metadata[MetadataKey] = key.String()
	params.SetIdempotencyKey(key.String())
	return nil
}

// Create is a charge tool's body: it carries the call's key on params
// (Carry), creates the PaymentIntent with client, and answers its Charge.
// A Stripe error comes back with its HTTP status where the harness reads
// it (Error): a decline (402) or a bad request is a definite failure, a
// 429 is retried, a 5xx or a lost answer is maybe executed, for Reconciler
// to settle.
func Create(ctx context.Context, client *stripego.Client, params *stripego.PaymentIntentCreateParams) (Charge, error) {
	if err := Carry(ctx, params); err != nil {
		return Charge{}, err
	}
	pi, err := client.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return Charge{}, Error(err)
	}
	return ChargeOf(pi), nil
}

// Error returns err with the HTTP status of a *stripe.Error in it visible
// to the harness (retryclass reads a StatusCode() method), and its text
// short enough for a model: Stripe's type, code, status and message, not
// the whole error object stripe-go prints. Other errors, such as a
// connection lost after sending, are returned as they are.
func Error(err error) error {
	var se *stripego.Error
	if errors.As(err, &se) && se.HTTPStatusCode != 0 {
		return &statusError{err: err, se: se}
	}
	return err
}

type statusError struct {
	err error
	se  *stripego.Error
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("stripe: %s", e.se.Type)
	if e.se.Code != "" {
		msg += " " + string(e.se.Code)
	}
	msg += fmt.Sprintf(" (HTTP %d): %s", e.se.HTTPStatusCode, e.se.Msg)
	if e.se.PaymentIntent != nil && e.se.PaymentIntent.ID != "" {
		msg += " (PaymentIntent " + e.se.PaymentIntent.ID + ")"
	}
	return msg
}

func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) StatusCode() int { return e.se.HTTPStatusCode }
