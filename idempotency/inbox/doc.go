// Package inbox processes triggers once: webhook deliveries and queue
// messages, each carrying an event id, behind an idempotency.Middleware
// keyed by that id instead of an Idempotency-Key header.
//
// StripeEvent and GitHubDelivery check the sender's signature first (a bad
// one is answered 401); HeaderEvent reads any header. A redelivery gets
// the stored answer, or 409 while the first is processed, so nothing is
// acknowledged before it is committed. docs/server.md, "The inbox", is the
// long form.
package inbox
