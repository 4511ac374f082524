// Package notify tells a person, through a chat or a pager, when an
// intent needs one and when it no longer does: Webhook posts each such
// event as a JSON Notice, signed with HMAC-SHA256 (Verify checks it).
//
// A Webhook is a harness.Observer, and its Record method the idempotency
// middleware's Options.OnUnknown. The call path only queues a notice; one
// goroutine sends them, retrying network errors, 5xx and 429 a bounded
// number of times, and a full queue drops the newest, counted and logged.
// docs/notify.md is the long form.
//
// # Caveats
//
// Delivery is best effort and at least once: a notice dropped or given
// up is logged, not stored. An operator's resolve is told only by the
// process whose agentctl socket served it.
package notify
