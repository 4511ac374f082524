package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	stripego "github.com/stripe/stripe-go/v82"

	"github.com/agentonce/agentonce/harness/downstream"
)

// Defaults of Reconciler's fields.
const (
	// DefaultSearchLag is the longest delay of Stripe's search index that
	// Reconciler assumes: Stripe documents search as current within a
	// minute normally and up to an hour behind during an outage.
	DefaultSearchLag = time.Hour
	// DefaultMaxListed bounds the PaymentIntents Reconciler reads from the
	// list of recent ones per question (ten pages).
	DefaultMaxListed = 1000
)

// maxSearched bounds the search results read for one key; more than one
// match is already a question for a person.
const maxSearched = 100

// Reconciler answers a charge tool's Reconcile question, "did the charge
// for this key happen?", by finding the PaymentIntent that carries the key
// in its metadata (Carry puts it there). Set its Reconcile method as the
// tool's:
//
//	tool.Reconcile = (&stripe.Reconciler{Client: sc}).Reconcile
//
// The answer: the one PaymentIntent with the key, succeeded, is Happened,
// with the answer Create would have given; none is DidNotHappen; anything
// else (an API error, a PaymentIntent not succeeded, two with one key, too
// many recent ones to read) is CannotTell, naming what it found.
//
// Stripe's search is not read-after-write: a PaymentIntent is searchable
// within a minute normally, up to an hour late during an outage. So a
// search that finds nothing is not taken as "absent": the PaymentIntents
// created in the last SearchLag, which the search may not show yet, are
// read from the list endpoint, which is current, and scanned for the key.
// A charge made earlier than that is in the search's index; one made later
// is in the list. "Did not happen" rests on one assumption, that the
// search index is never more than SearchLag behind, and the harness adds
// its own: it believes a "did not happen" only after the tool's settle
// window, and again a window later (harness.Tool.Reconcile). The zero
// value of every field but Client is a documented default.
type Reconciler struct {
	// Client is the stripe-go client of the account the tool charges.
	Client *stripego.Client
	// StripeAccount is the connected account the tool charges on (its
	// params' StripeAccount); empty means the client's own account.
	StripeAccount string
	// SearchLag is how far behind Stripe's search index may be, plus how
	// far this machine's clock may be ahead of Stripe's: the PaymentIntents
	// created in the last SearchLag are read from the list endpoint. Zero
	// or less means DefaultSearchLag. A shorter window is a claim about Stripe
	// that makes "did not happen" cheaper to prove and riskier to believe.
	SearchLag time.Duration
	// MaxListed bounds the PaymentIntents read from that list per
	// question; when more were created in the window, the answer is
	// CannotTell. Zero or less means DefaultMaxListed.
	MaxListed int
	// Output turns the PaymentIntent found into the tool's answer; nil
	// means the JSON of ChargeOf(pi), as Create answers.
	Output func(pi *stripego.PaymentIntent) (json.RawMessage, error)
}

// Reconcile is a harness.Tool's Reconcile hook: it finds the PaymentIntent
// that carries key. The input is not read: the key names the input.
func (r *Reconciler) Reconcile(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
	if r.Client == nil {
		return downstream.CannotTell(errors.New("stripe.Reconciler has no Client"))
	}
	k := key.String()
	found, err := r.search(ctx, k)
	if err != nil {
		return downstream.CannotTell(fmt.Errorf("searching Stripe's PaymentIntents for key %s: %w", k, err))
	}
	searched := len(found) > 0
	if !searched {
		if found, err = r.listRecent(ctx, k); err != nil {
			return downstream.CannotTell(fmt.Errorf("listing Stripe's recent PaymentIntents for key %s: %w", k, err))
		}
	}
	switch len(found) {
	case 0:
		return downstream.DidNotHappen()
	case 1:
	default:
		ids := make([]string, len(found))
		for i, pi := range found {
			ids[i] = pi.ID
		}
		return downstream.CannotTell(fmt.Errorf("%d PaymentIntents carry key %s (%s): which one stands is for a person to decide",
			len(found), k, strings.Join(ids, ", ")))
	}
	pi := found[0]
	if searched { // the index's copy may be older than the PaymentIntent
		params := &stripego.PaymentIntentRetrieveParams{}
		if r.StripeAccount != "" {
			params.SetStripeAccount(r.StripeAccount)
		}
		if pi, err = r.Client.V1PaymentIntents.Retrieve(ctx, pi.ID, params); err != nil {
			return downstream.CannotTell(fmt.Errorf("retrieving PaymentIntent %s for key %s: %w", found[0].ID, k, err))
		}
	}
	if pi.Status != stripego.PaymentIntentStatusSucceeded {
		return downstream.CannotTell(fmt.Errorf("PaymentIntent %s for key %s is %s, not succeeded", pi.ID, k, pi.Status))
	}
	out, err := r.output(pi)
	if err != nil {
		return downstream.CannotTell(fmt.Errorf("PaymentIntent %s for key %s succeeded, but its answer could not be made: %w", pi.ID, k, err))
	}
	return downstream.Happened(out)
}

// search returns the PaymentIntents Stripe's search index has with key.
func (r *Reconciler) search(ctx context.Context, key string) ([]*stripego.PaymentIntent, error) {
	params := &stripego.PaymentIntentSearchParams{}
	params.Query = fmt.Sprintf("metadata['%s']:'%s'", MetadataKey, key) // a UUID needs no escaping
	params.Limit = stripego.Int64(10)
	if r.StripeAccount != "" {
		params.SetStripeAccount(r.StripeAccount)
	}
	var found []*stripego.PaymentIntent
	n := 0
	for pi, err := range r.Client.V1PaymentIntents.Search(ctx, params) {
		if err != nil {
			return nil, err
		}
		if n++; n > maxSearched {
			return nil, fmt.Errorf("more than %d results", maxSearched)
		}
		if pi.Metadata[MetadataKey] == key {
			found = append(found, pi)
		}
	}
	return found, nil
}

// listRecent returns the PaymentIntents created in the last SearchLag that
// carry key, reading at most MaxListed.
func (r *Reconciler) listRecent(ctx context.Context, key string) ([]*stripego.PaymentIntent, error) {
	lag, maxListed := r.SearchLag, r.MaxListed
	if lag <= 0 {
		lag = DefaultSearchLag
	}
	if maxListed <= 0 {
		maxListed = DefaultMaxListed
	}
	params := &stripego.PaymentIntentListParams{CreatedRange: &stripego.RangeQueryParams{GreaterThanOrEqual: time.Now().Add(-lag).Unix()}}
	params.Limit = stripego.Int64(int64(min(maxListed, 100)))
	if r.StripeAccount != "" {
		params.SetStripeAccount(r.StripeAccount)
	}
	var found []*stripego.PaymentIntent
	n := 0
	for pi, err := range r.Client.V1PaymentIntents.List(ctx, params) {
		if err != nil {
			return nil, err
		}
		if n++; n > maxListed {
			return nil, fmt.Errorf("more than %d PaymentIntents were created in the last %s (Reconciler.MaxListed)", maxListed, lag)
		}
		if pi.Metadata[MetadataKey] == key {
			found = append(found, pi)
		}
	}
	return found, nil
}

func (r *Reconciler) output(pi *stripego.PaymentIntent) (json.RawMessage, error) {
	if r.Output != nil {
		return r.Output(pi)
	}
	return json.Marshal(ChargeOf(pi))
}
