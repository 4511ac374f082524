// Package notify tells a person, through a chat or a pager, when an
// intent needs one and when it no longer does: Webhook, a harness.Observer
// (Record for the idempotency middleware), posts each such event as a
// JSON Notice signed with HMAC-SHA256 (Verify checks it), from a bounded
// queue. docs/notify.md is the long form.
//
// # Caveats
//
// Delivery is best effort and at least once: a notice dropped or given
// up is logged, not stored.
package notify
