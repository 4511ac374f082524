// Package downstream is a tool's side of the services it calls: what the
// harness hands a tool about its call, and how the tool passes it on and
// reports back.
//
// Every attempt of a tool runs with a context that carries the intent's
// idempotency key, the attempt's id and the call's place. Transport sends
// the key and the attempt id as headers; ReadJSON ends a tool that calls
// an HTTP API, turning a non-2xx answer into a classified error:
//
//	client := &http.Client{Transport: &downstream.Transport{}}
//	...
//	return downstream.ReadJSON(client.Do(req.WithContext(ctx)))
//
// An Unkeyed tool's Reconcile hook answers Happened, DidNotHappen or
// CannotTell; LookupReconcile is such a hook for an API that looks a
// request up by its key, ServerReconcile for an agentonce server.
//
// # Caveats
//
//   - An Unkeyed tool's requests carry the key in UnkeyedKeyHeader, never
//     in Idempotency-Key, which would let net/http resend them.
//   - Transport does not interpret responses and does not retry.
package downstream
