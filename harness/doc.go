// Package harness wraps an AI agent's tools so that one intent of the agent
// produces at most one side effect, however often the model, the harness,
// the network or an operator repeats the call, and across restarts; and so
// that the agent is always told what really happened.
//
// Open a Harness on a journal, register tools, and send every tool call of
// the model through Call (or CallAll for one model response):
//
//	h, err := harness.Open(ctx, "agent.journal", nil) // or a postgres:// URL
//	...
//	h.Register(harness.Tool{Name: "charge_card", Effect: journal.Keyed, Func: charge})
//	res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "3",
//		Tool: "charge_card", Input: json.RawMessage(`{"amount":4900}`)})
//	modelText := res.ForModel()
//
// A Result's Status says what the outcome is (Succeeded, Failed,
// Suppressed, Unknown, InProgress, Rejected) and its Source how the call
// learned it (Executed, Replayed, Collapsed, Reconciled). The contract, in
// full, is docs/design.md in the repository.
//
// # The call path
//
// Each call goes through these steps, in this order:
//
//  1. Derive: the input is canonicalized (RFC 8785) and normalized by the
//     tool's schema; the key is a UUIDv5 of the journal's secret namespace
//     and (tenant, session, turn, tool, discriminator, canonical input).
//     Invalid input, or a call with no session or turn, is Rejected before
//     anything is recorded.
//  2. Collapse: identical calls (same key, same input) running at the same
//     time in this process join one flight and share its result
//     (Collapsed). The same key with another input never joins.
//  3. Begin: one journal transaction answers a settled intent from the
//     journal (Replayed), waits for an intent another owner holds, takes
//     over an intent whose owner stopped, suppresses a key used with
//     another input, refuses an altered input after a suppression (the
//     guard), or records a new pending intent. For Unkeyed tools that
//     record is on disk before the tool runs.
//  4. Execute: the tool runs with the key and an attempt id in its context
//     (KeyFromContext, AttemptFromContext; Transport sends both downstream),
//     while the flight renews its lease. Failures are classified by
//     retryclass and retried with backoff under the same key, each attempt
//     recorded before it runs.
//  5. Complete: the outcome is recorded, fenced by the lease token.
//  6. Answer: a Result with the outcome, the output, the key, the attempt
//     count and a text for the model (Result.ForModel) that is the same when
//     the answer is replayed.
//
// A caller whose context ends after the tool started is answered
// InProgress: the intent goes on, and a re-issue gets its outcome.
// journal.Reissue says, for any record, what a re-issue does now; Begin,
// the harness and agentctl replay ask the same function.
//
// # Effect kinds
//
// A tool declares what may be done after an attempt whose outcome is
// unknown. Unkeyed (the default) is never run again silently: once its
// settle window has passed (Tool.Settle: the downstream can no longer be
// acting on the attempt), its Reconcile hook is asked whether the effect
// happened, and only a DidNotHappen lets it run again; without a hook, or
// on CannotTell, the outcome is Unknown until a re-issue asks again or an
// operator resolves it (agentctl resolve). Keyed tools run again with the
// same key; Idempotent tools run again; ReadOnly tools are not journaled
// unless Tool.Journal is set.
//
// Once an attempt may have executed, a definite refusal of a later retry
// (a 4xx, a validation error) is never reported as "nothing was done": an
// Unkeyed intent becomes Unknown, a Keyed or Idempotent one Suppressed.
//
// # Suppression
//
// 409 (in flight) and 422 (same key, different payload; a 417 to a keyed
// request too) are retry-suppression signals the model cannot override. A
// 409 is waited out within the retry policy's in-flight budget and is not
// final: a re-issue asks again. A 422 stops at once and is recorded; so is
// a local fingerprint mismatch. After a suppression, a call of the same
// tool in the same (session, turn) that could run is refused too
// (Options.Guard widens or disables this; the model has no say).
//
// # Leases and time
//
// The owner of an intent renews its lease every LeaseTTL/3 while its flight
// runs, so a slow tool keeps its intent. A lost lease (fenced, or the store
// unreachable until it ran out) cancels the tool's context and the caller
// is told Unknown. The store's clock decides leases and expiry (the
// database server's on PostgreSQL). Unknown and pending intents never
// expire into a re-run; settled, known outcomes expire after
// Options.RecordTTL (7 days by default), and a call after that runs anew.
//
// # Panics and Goexit
//
// A tool's panic is recovered and becomes a *PanicError (value and stack)
// inside the Result's *OutcomeError. It is not retried. Since it may have
// struck after the side effect, the outcome is recorded as unknown, except
// for ReadOnly tools, whose failure is recorded as failed.
// runtime.Goexit in a tool is not recovered: as with
// golang.org/x/sync/singleflight, the goroutine of the caller that started
// the flight exits too, callers that joined it are told what the journal
// says (InProgress while the record is pending), and the intent stays
// pending until its lease expires, exactly as after a crash.
//
// # Caveats
//
//   - The key is only as good as the Turn: it must be the user's turn, not
//     the model's round-trip, or re-planning inside a turn makes new keys.
//   - Observer runs synchronously in the call path; keep it fast.
//   - net/http may resend a Keyed or Idempotent tool's request on a dead
//     reused connection; the journal does not count that as an attempt.
//   - The harness memoizes raw input → key for inputs up to 4 KiB; set
//     Options.CacheSize negative to disable it.
//   - Open on a bbolt file serves agentctl over a unix socket beside it,
//     "<journal>.sock" (mode 0600, the agent's own user only), so that
//     agentctl can read, resolve and tail the running agent despite the
//     file's lock; OpenOptions.Inspect turns it off or makes it required.
package harness
