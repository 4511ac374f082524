// Package fiberonce mounts agentonce's Idempotency-Key middleware
// (package idempotency) on a Fiber v3 app:
//
//	app.Use(fiberonce.New(m))
//
// The contract is idempotency's, unchanged: the key is scoped by tenant,
// method and the Fiber route pattern (c.Route().Path, e.g.
// "/v1/charges/:id", never the raw path, which is in the fingerprint as on
// net/http: the same key sent to another id of the route gets 422); the first response (status,
// headers, body) is recorded durably before the client sees it and
// replayed byte for byte with Idempotent-Replayed: true; another body
// under the same key gets 422, a duplicate in flight 409 with Retry-After
// (or the first answer with Options.Wait). An error a handler returns is
// passed to the app's ErrorHandler inside the middleware, so the answer it
// writes is the one recorded.
//
// Mounted with app.Use, the route is not known yet when the middleware
// runs (Fiber matches the next route as the chain proceeds), so New finds
// it among the app's routes of the request's method, in registration
// order, as Fiber does; mounted on a route (app.Post(path, New(m), h)) it
// is that route's. A request that matches no route passes through
// unprotected (Fiber answers it 404).
//
// The request crosses over to idempotency through Middleware.Serve, not
// a full conversion (adaptor.ConvertRequest): the *http.Request that the
// middleware and the Options' functions (Tenant, Require, Key) read is
// built with the method, the URL as url.ParseRequestURI reads the request
// target, Host, the headers (one value a name, the last), TLS, the peer's
// address, c.Context() and the route pattern, its strings copied in one
// allocation; its Body is empty, as the body Fiber holds is handed to
// Serve, which neither copies nor keeps it. A replay is written straight
// into Fiber's response (idempotency.ReplayWriter), not through an
// http.Header and a buffer. The first answer is copied from Fiber's
// response into the middleware's capture, which records it, and written
// back; a request the middleware does not protect (no key) keeps the
// chain's response as written. The chain runs with c.Context() set to the
// context the middleware runs it with, as a net/http handler gets
// r.Context(): not cancelled when the client leaves, and under
// Options.InTx carrying the journal's transaction (bolt.TxFrom,
// postgres.TxFrom), so that the handler's writes commit with its answer.
//
// # Caveats
//
// A protected request's response is buffered, as idempotency requires:
// a stream (c.SendStream, SendStreamWriter) is read to its end before the
// client sees a byte. A handler's panic settles the record unknown and is
// re-raised: mount Fiber's recover middleware before this one, or the
// panic takes the process down (the record stays unknown either way,
// never run twice).
// Routes registered after the app starts serving are found (the route
// list is rebuilt when app.HandlersCount changes).
package fiberonce
