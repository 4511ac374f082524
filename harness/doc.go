// Package harness wraps an AI agent's tools so that one intent of the agent
// produces at most one side effect, however often the model, the harness,
// the network or an operator repeats the call, and across restarts; and so
// that the agent is always told what really happened.
//
// Make a Harness on a journal (New, or package agentonce's Open), register
// tools, and send every tool call of the model through Call (or CallAll
// for one model response):
//
//	h := harness.New(store, nil) // or agentonce.Open(ctx, "agent.journal", nil)
//	h.Register(harness.Tool{Name: "charge_card", Effect: journal.Keyed, Func: charge})
//	res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "3",
//		Tool: "charge_card", Input: json.RawMessage(`{"amount":4900}`)})
//	modelText := res.ForModel()
//
// The journal records the intent before the tool runs and the outcome
// after; identical calls in flight at once share one execution. A Result's
// Status says what the outcome is and its Source how the call learned it.
// A tool's effect kind says what may follow an attempt whose outcome is
// unknown: an Unkeyed tool is never run again silently (its Reconcile hook
// is asked), and once an attempt may have executed, no later refusal is
// reported as "nothing was done". A tool with Approvals runs a call only
// once that many people approved its exact input.
//
// A tool's panic becomes a *PanicError inside the Result's *OutcomeError
// and is not retried; runtime.Goexit is not recovered, and the intent stays
// pending as after a crash.
//
// docs/design.md is the contract; docs/harness.md is this package's long
// form. The files follow a call: call.go, key.go, join.go, flight.go,
// attempt.go, settle.go, answer.go.
//
// # Caveats
//
//   - The key is only as good as the Turn: it must be the user's turn, not
//     the model's round-trip.
//   - Observer runs synchronously in the call path; keep it fast.
//   - Close does not close a store given to New (Options.OnClose may).
package harness
