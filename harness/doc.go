// Package harness wraps an AI agent's tools so that one intent of the agent
// produces at most one side effect, however often the model, the harness,
// the network or an operator repeats the call, and across restarts.
//
// Open a Harness on a journal, register tools, and send every tool call of
// the model through Call (or CallAll for one model response):
//
//	h, err := harness.Open(ctx, "agent.journal", nil) // or a postgres:// URL
//	...
//	h.Register(harness.Tool{Name: "charge_card", Effect: journal.Keyed, Func: charge})
//	res, err := h.Call(ctx, harness.Call{Tenant: "acme", Session: "s1", Turn: "3",
//		Tool: "charge_card", Input: json.RawMessage(`{"amount":4900}`)})
//	modelText := res.ForModel()
//
// # The call path
//
// Each call goes through these steps, in this order:
//
//  1. Derive: the input is canonicalized (RFC 8785) and normalized by the
//     tool's schema; the key is a UUIDv5 of the journal's secret namespace
//     and (tenant, session, turn, tool, discriminator, canonical input).
//     Invalid input is Rejected before anything is recorded.
//  2. Collapse: identical calls running at the same time in this process
//     join one flight and share its result (Collapsed).
//  3. Begin: one journal transaction answers a settled intent from the
//     journal (Replayed, or the recorded failure, suppression or unknown),
//     waits for an intent in flight elsewhere, takes over an intent whose
//     owner died, or records a new pending intent. For Unkeyed tools that
//     record is on disk before the tool runs.
//  4. Execute: the tool runs with the key and an attempt id in its context
//     (KeyFromContext, AttemptFromContext; Transport sends both downstream).
//     Failures are classified by retryclass and retried with backoff under
//     the same key, each attempt recorded before it runs.
//  5. Complete: the outcome is recorded, fenced by the lease token.
//  6. Answer: a Result says what happened, with the output, the key, the
//     attempt count and a text for the model (Result.ForModel) that is the
//     same when the answer is replayed.
//
// # Effect kinds
//
// A tool declares what may be done after an attempt whose outcome is
// unknown. Unkeyed (the default) is never run again silently: its Reconcile
// hook is asked "did key K happen?", and without one the outcome is
// Unknown until an operator resolves it (agentctl resolve). Keyed tools run
// again with the same key; Idempotent tools run again; ReadOnly tools are
// not journaled at all unless Tool.Journal is set.
//
// # Suppression
//
// 409 (in flight) and 422 (same key, different payload) are
// retry-suppression signals the model cannot override. A 409 is waited out
// within the retry policy's in-flight budget; a 422 stops at once. Either is
// recorded, a re-issue of the same intent gets the recorded suppression, and
// by default a call of the same tool in the same (session, turn) with
// altered input is refused too (Options.Guard widens or disables this; the
// model has no say).
//
// # Panics and Goexit
//
// A tool's panic is recovered and becomes a *PanicError (value and stack)
// inside the Result's *OutcomeError. It is not retried. Since it may have
// struck after the side effect, the outcome is recorded as unknown, except
// for ReadOnly and Idempotent tools, whose failure is recorded as failed.
// runtime.Goexit in a tool is not recovered: as with
// golang.org/x/sync/singleflight, the goroutine of the caller that started
// the flight exits too, callers that joined it get a Rejected result, and
// the intent stays pending until its lease expires, exactly as after a
// crash.
//
// # Answers that are not replays
//
// Some outcomes are taken over rather than replayed by a later call: an
// unknown outcome of a Keyed or Idempotent tool runs again with the same
// key, and a failure whose last attempt provably did not execute (its retry
// budget ran out on connection refused, 429 or 503) may run again, since
// nothing happened. Everything else settled is answered from the journal
// until the record expires (Options.RecordTTL, 7 days by default); a call
// after that runs anew, as a new intent.
//
// # Caveats
//
//   - The key is only as good as the Turn: it must be the user's turn, not
//     the model's round-trip, or re-planning inside a turn makes new keys.
//   - A fingerprint mismatch on an explicit StepKey is suppressed but not
//     written into the existing record, which belongs to the first input.
//   - Observer runs synchronously in the call path; keep it fast.
//   - The harness memoizes raw input → key for inputs up to 4 KiB; set
//     Options.CacheSize negative to disable it.
package harness
