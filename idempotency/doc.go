// Package idempotency is the server side of the Idempotency-Key contract
// (IETF draft-ietf-httpapi-idempotency-key-header) as net/http middleware,
// on the same journal.Store as agentonce's agents.
//
// New returns a Middleware; its Handler wraps the handlers of a ServeMux,
// whose route pattern scopes the key. A request carrying Idempotency-Key
// (or X-Agentonce-Key), with a method other than GET, HEAD, OPTIONS or
// TRACE, runs once per key, scoped by tenant, method and route. Its
// response is recorded durably before the client sees it and replayed
// byte for byte, with Idempotent-Replayed: true, until Options.TTL.
// Another body gets 422, a request while the first runs 409 with
// Retry-After: RFC 9457 problem details.
//
// A handler that panics, or a process that dies mid-request, leaves the
// record unknown: the retry gets 500, never a second run, until an
// operator resolves it, or Options.Reconcile answers for it. Lookup tells
// a client what became of its key; Serve is Handler for a server that is
// not net/http's; package idempotency/inbox keys webhook deliveries by
// event id. The package opens no journal.
//
// # Caveats
//
// Responses are buffered: no streaming, Flush or Hijack. A new key costs
// two durable writes (one with Options.InTx). A 5xx is not stored unless
// Options.StoreServerErrors. Blobs are not removed by the journal's GC.
// The long form is docs/server.md.
package idempotency
