// Package notify tells a person, through a chat or a pager, when an
// intent needs one and when it no longer does: Webhook posts each such
// event as a signed JSON Notice.
//
// A Webhook is a harness.Observer (an agent's EventNeedsPerson) and, by
// its Record method, the idempotency middleware's Options.OnUnknown and
// the agentctl socket's OnResolve (a server's records). Either way the
// call path only queues the notice: one goroutine sends the queue, a
// notice at a time, retrying network errors, 5xx and 429 a bounded number
// of times; a full queue drops the newest notice, counted and logged.
//
// Each POST carries the header Agentonce-Signature, "t=<unix
// seconds>,v1=<hex HMAC-SHA256 of the secret over t, '.', and the body>",
// and Idempotency-Key, the notice's ID: Verify checks the first, and a
// receiver that deduplicates by the second sees a retried notice once.
// docs/notify.md is the long form.
//
// # Caveats
//
//   - Delivery is at least once and best effort: a notice dropped, given
//     up or unsent at Close is logged, never stored. agentctl queue lists
//     what needs a person whatever was told.
//   - A re-issued call that again ends needing a person is told again,
//     under the same key: group by key.
//   - An operator's resolve is told only by the process whose socket
//     served it: one made directly on PostgreSQL or Redis is not.
package notify
