// Package retryclass decides what a failed tool call means and what to do
// next: retry with the same key, wait, stop, or hand the error to the model.
//
// Classify, ClassifyContext and ClassifyResponse turn an error or an HTTP
// response into a Verdict: a Class, the wait the server asked for, and the
// status. A Policy (exponential backoff with jitter, on cenkalti/backoff/v4)
// turns the verdicts of one call into waits and a decision to stop, through
// a per-call Schedule:
//
//	s := policy.NewSchedule()
//	for {
//		err := try(ctx)
//		v := policy.Verdict(ctx, err)
//		if v.Class == retryclass.Success { ... }
//		delay, ok := s.Next(ctx, v)
//		if !ok { ... stop: s.StopReason() says why }
//		if retryclass.Wait(ctx, delay) != nil { ... }
//	}
//
// # Classes
//
// This is the table of docs/design.md ("Retry classes") as the code implements
// it. The first column is Class.String, the name journals store.
//
//	class           sources                                            harness behaviour
//	success         2xx, nil error                                     record, return
//	not-executed    connection refused, DNS failure, any dial error,   backoff (honour Retry-After), same key,
//	                408, 425, 429, 503 with Retry-After,               new attempt id, within budgets
//	                MarkNotExecuted
//	maybe-executed  timeouts, read/write errors, resets and EOF after  as above for Keyed and Idempotent
//	                the request was written, 500, 502, 504, other 5xx, tools; Unkeyed: no automatic retry
//	                503 without Retry-After, the tool's own deadline,  (Reconcile, else unknown)
//	                unknown errors, MarkMaybeExecuted
//	in-flight       409                                                wait within the in-flight budget,
//	                                                                   then suppress "in progress"
//	mismatch        422, 417 to a request carrying Idempotency-Key,    stop, record suppressed
//	                local fingerprint mismatch, Suppress
//	terminal        other 4xx, 501, 505, a failed certificate check,   record failed (if no earlier try may
//	                Permanent                                          have executed); the model sees the error
//	canceled        the caller's context ended                         stop; the try's outcome is not known
//
// Precedence: a marker a tool returns (Permanent, MarkNotExecuted,
// MarkMaybeExecuted, Suppress; the outermost wins) beats an HTTP status
// (from a *StatusError or any error with a StatusCode() int method), which
// beats the caller's context, which beats network and I/O errors. A tool
// replaces the whole table with Policy.Classify.
//
// An error nobody recognises is MaybeExecuted. An arbitrary tool function
// that fails may have done its work before failing, and treating that as
// "nothing happened" is how a customer is charged twice. A tool that knows
// better says so with a marker.
//
// 408 Request Timeout and 425 Too Early are NotExecuted, not terminal: the
// server says it did not process the request, and a retry can succeed.
//
// A class describes one try. What the harness records depends on the tries
// before it: once any try of an intent may have executed, a later terminal
// answer refuses a retry of something that may already have happened, and
// is never recorded as a failure in which nothing was done (the harness
// records an Unkeyed intent unknown and a Keyed or Idempotent one
// suppressed). The same holds after a restart, whose first try retries the
// crashed one.
//
// ClassifyContext lets a definite answer (a marker or a status) win over
// the caller's context being done: a 422 received just as the caller gave
// up is still a mismatch, and a 503 with Retry-After still did not execute.
// Only an answer that says nothing definite becomes Canceled.
//
// # Budgets
//
// A Schedule stops at the first of: a class that is not retryable;
// Policy.MaxAttempts tries (counting the first; in-flight polls not
// counted); a wait that would end past Policy.MaxElapsed; the
// Policy.InFlightBudget spent waiting on 409s; the caller's context done, or a
// wait that would end at or past its deadline; the shared Budget spent.
// Defaults: 5 tries, 30s elapsed, waits from 500ms growing ×1.5 to 5s with
// ±50% jitter, 10s in-flight, Retry-After honoured up to 10s, no Budget.
//
// A Budget is a retry budget shared by the calls to one downstream: retries
// may be at most a ratio of the calls made (20% by default) plus a small
// floor, over a sliding window. It is a budget rather than a circuit
// breaker because a breaker refuses first tries too, which the model would
// see as failures of its intents; a budget only removes the retries that
// multiply load on a downstream that is already failing.
//
// # Caveats
//
// 503 without Retry-After is MaybeExecuted: most servers send 503 before
// executing, but a proxy may send it after the origin began. Tools whose
// server is known to be safe override it with Policy.Classify. "With
// Retry-After" means a wait above zero: "Retry-After: 0" counts as none.
//
// Classes are about the try, not the tool. Schedule.Next retries every
// retryable class, MaybeExecuted included; the caller must not run an
// Unkeyed tool again after a MaybeExecuted verdict.
//
// A Retry-After longer than Policy.MaxRetryAfter is waited for only
// MaxRetryAfter, so the next try may come earlier than the server asked and
// be refused again, at the cost of an attempt. Retry-After waits are not
// jittered: clients told the same instant retry together.
//
// Classification walks the error tree (Unwrap() error and Unwrap() []error)
// in errors.As order, with type assertions: an error type that presents
// itself as another only through an As method is not recognised.
//
// The markers' names are MarkNotExecuted and MarkMaybeExecuted because
// NotExecuted and MaybeExecuted are the Class constants.
package retryclass
