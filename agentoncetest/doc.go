// Package agentoncetest is the offline kit for testing an agent's retry
// behaviour: a downstream that honours Idempotency-Key and counts the side
// effects it really performed, fault injectors for HTTP and for plain tool
// functions, and a scripted model that drives an agent loop without an LLM.
//
// The three parts compose by wrapping, outermost first:
//
//	agent loop (ScriptedModel) → harness → http.Client{Transport: downstream.Transport
//	→ FaultTransport → http.Transport} → loopback Server → Downstream → your handler
//
// so every retry the harness makes crosses the faults, and the Downstream
// sees what a real payment API would see. A test then asserts counts:
// Downstream.Duplicates() == 0, Downstream.Effects(key) == 1.
//
// # Downstream
//
// Downstream implements the server side of the Idempotency-Key contract as
// Stripe and the IETF draft (draft-ietf-httpapi-idempotency-key-header)
// describe it: the first response for a (client, key) is stored and
// replayed, marked "Idempotent-Replayed: true"; the same key with a
// different fingerprint (method, path and query, body) is 422; the same key
// while the first request runs is 409; a missing key where one is required
// is 400; stored responses expire after a TTL (24 hours by default, counted
// from the first request). Errors are RFC 9457 problem details
// (application/problem+json). It is meant to be put in front of real
// handlers, not only in tests. With DownstreamOptions.Passthrough it
// enforces nothing and only counts: the unprotected API of an Unkeyed tool,
// where Duplicates shows what a blind re-run would have cost. An Unkeyed
// tool's key arrives in X-Agentonce-Key (downstream.DefaultUnkeyedKeyHeader),
// not Idempotency-Key, so such a Downstream is made with KeyHeader set to
// it to count per intent.
//
// A side effect is a call into the wrapped handler whose response was
// stored with a status below 400 (DownstreamOptions.IsEffect changes the
// rule). A 5xx is not stored by default: the key is released and a retry
// runs the handler again, which is right for a handler whose 5xx means
// "nothing committed". Stripe stores 5xx responses instead (its handler may
// fail after a partial effect); DownstreamOptions.StoreServerErrors does
// that.
//
// With DownstreamOptions.StateFile the stored responses and counts survive
// the process: each stored response rewrites the file atomically and
// durably before the response is sent, so a crash after the effect but
// before the answer still finds the effect counted and the response
// stored, as a database-backed API would.
//
// # Faults
//
// FaultTransport (an http.RoundTripper) and FaultFunc (a tool function
// wrapper) inject the failures that make retries dangerous: a response lost
// after the downstream committed, a reply later than the client's timeout,
// 503 with Retry-After, a connection refused before sending or reset after
// it, a request delivered twice. The errors returned have the shapes of the
// real ones (*net.OpError with op "dial" or "read", the context's error), so
// retryclass classifies them as it would the real thing: dial errors and
// 503 with Retry-After as not executed, the rest as maybe executed. The
// schedule is a script by request number, then a seeded draw whose result
// for request n depends only on the seed and n.
//
// # Scripted model
//
// ScriptedModel replays a Script (Go values or JSON): per user turn, the
// model's steps — tool calls with ids, names and JSON input, parallel
// duplicate calls, a re-issued call, an altered input after a suppression —
// and a final text. Each Next takes the results of the step before, checks
// that every call was answered (and, with Step.Expect, how), and returns
// the next step.
//
// # Assertions
//
// AssertNoDuplicates, AssertEffects (effects per intent, by the results'
// keys), AssertStatuses / AssertStatus and AssertSameAnswer (a replay says
// what the first answer said) report through a Reporter (any testing.TB,
// or a *Report in a main program) and return whether they held.
// StartServer is NewServer without a test: the kit runs in a demo or a
// smoke check as it does in a test. The package's own scenarios_test.go runs the scenarios of
// docs/design.md, "What the tests prove", through them; the crash matrix,
// which needs a process that really dies, is in examples/llm-agent.
//
// # Caveats
//
//   - Keys on safe methods (GET, HEAD, OPTIONS, TRACE) are ignored, as
//     Stripe ignores them: those requests pass straight through and are not
//     counted.
//   - A request still running when the process dies is not in the state
//     file; like an uncommitted transaction, it did not happen. Its effect,
//     if the handler made one outside the Downstream, is not counted.
//   - Effects(key) sums over clients; Duplicates counts per (client, key).
//   - The state file is rewritten whole after each stored response: right
//     for tests and demos, not for a downstream with millions of keys.
//   - For FaultFunc, LoseResponse and ResetAfterSend both run the function
//     to the end before failing; a function has no connection to cut
//     halfway.
//   - Request numbers follow arrival order; with concurrent requests which
//     request is number n is up to the scheduler, the plan for n is not.
package agentoncetest
