// Package retryclass decides what a failed tool call means and what to do
// next: retry with the same key, wait, stop, or hand the error to the model.
//
// Classify, ClassifyContext and ClassifyResponse turn an error or an HTTP
// response into a Verdict: a Class (the table of docs/design.md, "Retry
// classes"), the wait the server asked for, and the status. A marker a
// tool returns (Permanent, MarkNotExecuted, MarkMaybeExecuted, Suppress;
// the outermost wins) beats an HTTP status, which beats the caller's
// context, which beats network errors: a 422 that arrives as the caller
// gives up is still a mismatch. An error nobody recognises is
// MaybeExecuted: a tool that fails may have done its work first. A class
// describes one try: once any try of an intent may have executed, the
// harness never records a later answer as "failed, nothing was done".
//
// A Policy (exponential backoff with jitter) turns one call's verdicts
// into waits through a per-call Schedule, which stops at the first limit
// that Schedule.Next lists. A Budget caps retries to one downstream at a
// ratio of its calls; unlike a circuit breaker it never refuses a first
// try. docs/retryclass.md is the long form.
//
// # Caveats
//
//   - 503 without Retry-After (or with "Retry-After: 0") is MaybeExecuted:
//     a proxy may send it after the origin began.
//   - Schedule.Next retries MaybeExecuted too; the caller must not run an
//     Unkeyed tool again after it.
//   - A Retry-After above MaxRetryAfter is cut to it, so the next try may
//     be refused again; Retry-After waits are not jittered.
//   - Classification walks Unwrap() error and Unwrap() []error in
//     errors.As order by type assertion; an As method is not consulted.
package retryclass
