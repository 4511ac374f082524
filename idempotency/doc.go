// Package idempotency is the server side of the Idempotency-Key contract
// (IETF draft-ietf-httpapi-idempotency-key-header) as net/http middleware,
// on the same journal.Store as agentonce's agents.
//
// New returns a Middleware; its Handler wraps the handlers of a ServeMux,
// whose route pattern (r.Pattern) scopes the key. For a request carrying
// Idempotency-Key (or the harness's X-Agentonce-Key), with a method other
// than GET, HEAD, OPTIONS or TRACE:
//
//   - the key is scoped by tenant (Options.Tenant, from the request's
//     authentication), method and route, never used alone;
//   - the body is fingerprinted canonically (JSON through keyderive, forms
//     sorted, other bodies by their bytes), less the route's Volatile fields;
//   - the first request runs; its complete response (status, the headers
//     that matter, body) is recorded durably before the client sees it, and
//     replayed byte for byte, with Idempotent-Replayed: true, to any request
//     with the same key and fingerprint until Options.TTL (from memory, for
//     a retry to the same Middleware: a settled answer cannot change
//     before it expires, docs/server.md);
//   - another fingerprint gets 422; a request while the first runs gets 409
//     with Retry-After, or with Options.Wait the first one's answer; a
//     missing key where Options.Require says one is needed gets 400. These
//     bodies are RFC 9457 problem details.
//
// Serve is Handler's entry point for a server that is not net/http's
// (adapters/fiber mounts the middleware on Fiber through it): it is handed
// the body the server holds instead of reading r.Body, and a
// ResponseWriter that is a ReplayWriter takes a stored answer whole,
// status, header lines and body, to write in the server's own form.
//
// A handler that panics, and a process that dies mid-request, leave the
// record unknown: the retry gets 500 (outcome-unknown) naming the journal
// key, never a second run, until an operator resolves it (agentctl
// resolve). The records are ordinary journal records: Tenant is the
// tenant, Session the client's key, Tool the method and route, so agentctl
// ls, show, timeline and resolve work on them. NewInbox applies the same
// machinery to webhook deliveries, keyed by event id.
//
// # Caveats
//
// A handler's response is buffered (Options.MaxResponseBytes): no
// streaming, no Flush or Hijack. Two durable writes surround every new key
// (the write-ahead and the outcome); with Options.InTx (PostgreSQL, bbolt)
// the handler's own writes commit with the outcome, the write-ahead need
// not reach the disk first, and a new key costs that one commit; on bbolt
// the handler holds the file's single writer lock while it runs. A 5xx is not
// stored unless Options.StoreServerErrors: the handler must mean "nothing
// committed" by it. Body-over-cap blobs are not removed by the journal's
// GC. The long form, with the decisions behind each choice, is
// docs/server.md.
package idempotency
