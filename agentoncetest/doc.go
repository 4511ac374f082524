// Package agentoncetest is the offline kit for testing an agent's retry
// behaviour: a downstream that honours Idempotency-Key and counts the side
// effects it really performed, fault injectors for HTTP and for plain tool
// functions, and a scripted model that drives an agent loop without an LLM.
//
// The parts compose by wrapping, outermost first: ScriptedModel, the
// harness, an http.Client whose Transport is downstream.Transport over
// FaultTransport, a loopback Server, the Downstream, your handler. Every
// retry then crosses the faults, and a test asserts counts:
// Downstream.Duplicates() == 0, Downstream.Effects(key) == 1.
//
// Downstream is the server side of the Idempotency-Key contract as Stripe
// and draft-ietf-httpapi-idempotency-key-header describe it (its doc has
// the rules); a side effect is a call whose response was stored below 400.
//
// FaultTransport and FaultFunc inject lost responses, late replies, 503
// with Retry-After, refused and reset connections and double deliveries,
// as errors shaped like the real ones so that retryclass classifies them
// alike; request n's fault depends only on the script, the seed and n.
// ScriptedModel replays a Script of tool calls turn by turn; the Assert
// functions report through any testing.TB or a *Report.
//
// docs/agentoncetest.md is the long form.
//
// # Caveats
//
//   - Keys on safe methods are ignored, as Stripe does: not counted.
//   - A request running when the process dies is not in the state file;
//     an effect its handler made elsewhere is not counted.
//   - Effects(key) sums over clients; Duplicates counts per (client, key).
//   - The state file is rewritten whole after each stored response: for
//     tests and demos, not millions of keys.
//   - FaultFunc's LoseResponse and ResetAfterSend run the function to the
//     end before failing.
//   - With concurrent requests, which request is number n is up to the
//     scheduler; the plan for n is not.
package agentoncetest
