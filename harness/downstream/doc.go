// Package downstream is a tool's side of the services it calls: what the
// harness hands a tool about its call, and how the tool passes it on and
// reports back.
//
// Every attempt of a tool runs with a context that carries the intent's
// idempotency key, the attempt's id and the call's place
// (KeyFromContext, AttemptFromContext, CallFromContext). Transport, an
// http.RoundTripper, sends the key and the attempt id as headers, so that
// a downstream that deduplicates by key sees every retry of one intent
// under one key; ReadJSON ends a tool that calls an HTTP API, turning a
// non-2xx answer into an error the harness classifies by status:
//
//	client := &http.Client{Transport: &downstream.Transport{}}
//	...
//	return downstream.ReadJSON(client.Do(req.WithContext(ctx)))
//
// When an attempt of an Unkeyed tool ended without an answer, its Reconcile
// hook asks the downstream what happened and answers with Happened,
// DidNotHappen or CannotTell; harness.Tool.Reconcile says when it is asked
// and what each answer does. LookupReconcile is such a hook for an API that
// looks a request up by its key, ServerReconcile for an agentonce server.
//
// # Caveats
//
//   - An Unkeyed tool's requests carry the key in UnkeyedKeyHeader, never
//     in Idempotency-Key: net/http resends a request that carries
//     Idempotency-Key on a dead reused connection, and for a downstream
//     that does not deduplicate that resend would be a second effect.
//   - Transport does not interpret responses and does not retry: the
//     harness does.
package downstream
