// Package retryclass decides what a failed tool call means and what to do
// next: retry with the same key, wait, stop, or hand the error to the model.
//
// Classify, ClassifyContext and ClassifyResponse turn an error or an HTTP
// response into a Verdict: a Class, the wait the server asked for and the
// status. A Policy (on cenkalti/backoff/v4) turns a sequence of verdicts
// into waits and a decision to stop, through a per-call Schedule.
//
// # Classes
//
//	class           typical sources                                    harness behaviour
//	success         2xx, nil error                                     record, return
//	not-executed    connection refused, DNS failure, any dial error,   backoff (honour Retry-After), same key,
//	                408, 425, 429, 503 with Retry-After,               new attempt id, within budgets
//	                MarkNotExecuted
//	maybe-executed  timeouts, reset/EOF after the request was written, as above for Keyed and Idempotent
//	                500, 502, 504, other 5xx, 503 without Retry-After, tools; Unkeyed: no automatic retry
//	                the tool's own DeadlineExceeded, unknown errors,   (Reconcile, else unknown)
//	                MarkMaybeExecuted
//	in-flight       409                                                wait within the in-flight budget,
//	                                                                   then suppress "in progress"
//	mismatch        422, local fingerprint mismatch, Suppress          stop, record suppressed
//	terminal        other 4xx, 501, 505, a failed certificate check,   record failed, the model sees the error
//	                Permanent
//	canceled        the caller's context ended                         stop; the try's outcome is not known
//
// Markers a tool returns win over everything else; then an HTTP status
// (from a *StatusError or any error with a StatusCode() int method); then
// context and network errors. A tool overrides the table with
// Policy.Classify.
//
// An error nobody recognises is MaybeExecuted. An arbitrary tool function
// that fails may have done its work before failing, and treating that as
// "nothing happened" is how a charge is made twice. A tool that knows
// better says so with a marker.
//
// # Caveats
//
// 503 without Retry-After is MaybeExecuted: most servers send 503 before
// executing, but a proxy may send it after the origin began. Tools whose
// server is known to be safe override it.
//
// Classes are about the try, not the tool. Schedule.Next retries every
// retryable class, MaybeExecuted included; the harness must not run an
// Unkeyed tool again after a MaybeExecuted verdict.
//
// A Retry-After longer than Policy.MaxRetryAfter is waited for only
// MaxRetryAfter, so the next try may come earlier than the server asked and
// be refused again; that refusal costs an attempt.
package retryclass
