// Package fiberonce mounts agentonce's Idempotency-Key middleware
// (package idempotency) on a Fiber v3 app:
//
//	app.Use(fiberonce.New(m))
//
// The contract is idempotency's, unchanged: the key is scoped by tenant,
// method and the Fiber route pattern (c.Route().Path, never the raw path,
// which is in the fingerprint: the same key sent to another id of the
// route gets 422); the first response is recorded durably before the
// client sees it and replayed byte for byte with Idempotent-Replayed:
// true; another body under the same key gets 422, a duplicate in flight
// 409 (or the first answer with Options.Wait). An error a handler returns
// goes to the app's ErrorHandler inside the middleware, so the answer it
// writes is the one recorded.
//
// Mounted with app.Use, the middleware finds the route among the app's
// routes of the request's method, in registration order, as Fiber does;
// mounted on a route it is that route's. A request that matches no route
// passes through unprotected.
//
// The request reaches idempotency through Middleware.Serve with Fiber's
// body, neither copied nor kept, and every header line as Fiber received
// it, so that idempotency's parser reads the key (a key on two lines is
// refused there, as on net/http); a replay is written straight into
// Fiber's response. The chain runs with c.Context() set to the
// middleware's context, as a net/http handler gets r.Context(): not
// cancelled when the client leaves, and under Options.InTx carrying the
// journal's transaction, so that the handler's writes commit with its
// answer.
//
// docs/adapters.md ("adapters/fiber") is the long form.
//
// # Caveats
//
//   - A protected request's response is buffered: a stream is read to its
//     end before the client sees a byte.
//   - A handler's panic settles the record unknown and is re-raised: mount
//     Fiber's recover middleware before this one.
//   - Routes registered after the app starts serving are found.
package fiberonce
