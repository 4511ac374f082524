// Package idempotency is the server side of the Idempotency-Key contract
// (IETF draft-ietf-httpapi-idempotency-key-header) as net/http middleware,
// on the same journal.Store as agentonce's agents.
//
// New returns a Middleware; its Handler wraps the handlers of a ServeMux,
// whose route pattern scopes the key. A request carrying Idempotency-Key
// (or X-Agentonce-Key), with a method other than GET, HEAD, OPTIONS or
// TRACE, runs once per key, scoped by tenant (Options.Tenant), method and
// route. Its complete response is recorded durably before the client sees
// it and replayed byte for byte, with Idempotent-Replayed: true, to a
// request with the same key and canonical body until Options.TTL. Another
// body gets 422, a request while the first runs 409 with Retry-After (or,
// with Options.Wait, the first answer), a missing key where Options.Require
// wants one 400: RFC 9457 problem details. A route in Options.Approvals
// runs a request only once people approved it (409 awaiting-approval until
// then, 422 once rejected or expired). What a stored record means to a
// request is the journal's rule, reissue.Request.
//
// A handler that panics, or a process that dies mid-request, leaves the
// record unknown: the retry gets 500 naming the journal key, never a second
// run, until an operator resolves it with agentctl, or Options.Reconcile
// answers for it from the application's data by the harness's settle-window
// rules. Lookup tells a client what became of its key. Serve is Handler for a
// server that is not net/http's (adapters/fiber). Package idempotency/inbox
// applies the middleware to webhook deliveries, keyed by event id.
//
// The package opens no journal: a program imports the store it opens
// (journal/bolt for a file path).
//
// # Caveats
//
// Responses are buffered (Options.MaxResponseBytes): no streaming, Flush or
// Hijack. A new key costs two durable writes, the write-ahead and the
// outcome; with Options.InTx (PostgreSQL, bbolt) the handler's own writes
// commit with the outcome, a new key costs that one commit, and on bbolt
// the handler holds the file's single writer lock while it runs. A 5xx is
// not stored unless Options.StoreServerErrors: it must mean "nothing
// committed". Blobs are not removed by the journal's GC. The long form is
// docs/server.md.
package idempotency
