// Package inbox processes triggers once: webhook deliveries and queue
// messages, each carrying an event id, behind an idempotency.Middleware
// keyed by that id instead of an Idempotency-Key header.
//
// New returns the middleware for the id an EventID takes from a delivery:
// StripeEvent and GitHubDelivery check the sender's signature first (a bad
// one is answered 401: their errors wrap idempotency.ErrSignature), and
// HeaderEvent reads any header, such as a queue's message id. A processed
// event's redelivery gets the stored answer; one that arrives while the
// first is still being processed gets 409 with Retry-After, so that
// nothing is acknowledged before it is committed and the sender delivers
// it again later. With idempotency.Options.InTx (PostgreSQL, bbolt) the
// handler's writes and the inbox record commit in one transaction.
//
// The reasoning behind each answer is in docs/server.md ("The inbox").
package inbox
