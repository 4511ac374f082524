// Package stripe settles a charge made through stripe-go whose answer was
// lost: a harness tool that creates a PaymentIntent carries the call's
// agentonce key in the PaymentIntent's metadata and as its Idempotency-Key
// (Carry, Create), and its Reconcile hook (Reconciler) finds the
// PaymentIntent by that key, so that the harness answers the call from
// Stripe instead of leaving it for a person:
//
//	tool := harness.Typed("charge_card", journal.Unkeyed, func(ctx context.Context, in ChargeInput) (stripe.Charge, error) {
//		return stripe.Create(ctx, sc, &stripego.PaymentIntentCreateParams{Amount: stripego.Int64(in.Cents), ...})
//	})
//	tool.Reconcile = (&stripe.Reconciler{Client: sc}).Reconcile
//
// The tool is Unkeyed although Stripe honours the key: Stripe keeps an
// idempotency key for 24 hours, so a run again "with the same key" is safe
// only within a day, and an Unkeyed tool never runs again without asking
// Reconcile first. The key sent as Idempotency-Key still makes stripe-go's
// and net/http's own resends, and a run again after a wrong "did not
// happen" within the day, answer the first charge instead of making a
// second.
//
// Reconciler's doc says how a missing PaymentIntent is proven missing
// although Stripe's search lags; package stripetest is a local fake of
// Stripe's PaymentIntents API for testing a tool with the real stripe-go.
//
// # Caveats
//
//   - A PaymentIntent found but not succeeded (declined, awaiting 3-D
//     Secure or capture, processing) is "cannot tell": the call stays
//     unknown until a person resolves it (agentctl resolve). A decline
//     answered is a failure at once (Create passes Stripe's 402 on).
//   - When the search finds the key, the list is not read: a second
//     PaymentIntent with the same key made within SearchLag (possible only
//     after Stripe forgot the key, 24 hours on) goes unseen.
//   - Stripe's search is not offered to accounts in India; there every
//     question is "cannot tell".
//   - Metadata is editable: a PaymentIntent whose agentonce_key was
//     removed or changed in the Dashboard is not found.
package stripe
