// Package singleflight collapses concurrent calls with the same key into one
// execution whose result every caller shares, and lets each caller leave
// when its own context ends.
//
// It does what golang.org/x/sync/singleflight does, for any comparable key
// and any result type, and adds context semantics that a tool-calling
// harness needs: a caller whose context ends returns at once without
// cancelling the work for the others, and the work's own context is
// cancelled only when every caller waiting on it has left (it is reference
// counted, so the last interested caller decides). Each result says whether
// the caller joined a flight someone else started.
//
// # Panics and runtime.Goexit
//
// A panic in fn is recovered, and every caller waiting on the flight gets
// the same *[PanicError] carrying the panic value and the stack. Unlike
// x/sync, nothing re-panics: a tool's panic becomes an error the harness
// can record and answer with, instead of crashing the agent process.
//
// A [runtime.Goexit] in fn (t.FailNow, t.SkipNow) is not a panic and is
// not swallowed: the goroutine of the caller that started the flight exits,
// exactly as if no Group were involved, and every caller that joined the
// flight gets [ErrGoexit]. When the starter's context can be cancelled fn
// runs on a goroutine of its own (see below); the starter's goroutine then
// calls runtime.Goexit itself once it sees the flight end that way, so the
// policy is the same for every kind of context. A starter that had already
// left because its context ended has returned and is unaffected.
//
// # Where fn runs
//
// If the starter's ctx can never be cancelled (ctx.Done() returns nil, as
// for context.Background), nobody could leave early, so fn runs on the
// starter's goroutine and receives ctx itself. Otherwise fn runs on a new
// goroutine with a context derived from context.WithoutCancel(ctx), which
// the starter, like every other caller, waits on. The second path costs a
// goroutine per flight, the price of letting the starter leave
// (BENCHMARKS.md has the figures).
//
// # Caveats
//
//   - There is no cache: once a flight returns the key is free and a later
//     call runs fn again. Durable deduplication is the journal's job; this
//     package only merges calls that overlap in time within one process.
//   - Every caller gets the same V. If V holds pointers, slices or maps,
//     callers share them and must not mutate them.
//   - A caller that leaves does not stop fn: fn stops only if it watches its
//     context. When every caller has left, fn's context is cancelled but fn
//     may still be running, perhaps past its side effect. Such an abandoned
//     flight takes no new callers; one that arrives for its key waits for
//     it to return (fn never runs twice at once for one key), takes its
//     result if it succeeded, and otherwise starts a new flight.
//   - fn must not use its context after returning: it may be cancelled then.
//   - A caller whose context is already done when it calls Do gets its
//     context's cause at once, and fn is not run for it.
package singleflight
