// Package singleflight collapses concurrent calls with the same key into one
// execution whose result every caller shares, and lets each caller leave
// when its own context ends.
//
// It does what golang.org/x/sync/singleflight does, for any comparable key
// and result type, with context semantics: a caller whose context ends
// returns at once, and the work's context is cancelled only when every
// caller has left.
//
// A panic in fn is recovered, and every caller gets the same *[PanicError]
// (value and stack); nothing re-panics. A [runtime.Goexit] in fn is not
// swallowed: the starter's goroutine exits, and every caller that joined
// gets [ErrGoexit].
//
// fn runs on the starter's goroutine when the starter's context can never
// be cancelled, otherwise on a goroutine of its own with a context derived
// from context.WithoutCancel.
//
// docs/singleflight.md is the long form.
//
// # Caveats
//
//   - There is no cache: once a flight returns, a later call runs fn again.
//   - Every caller gets the same V; if V holds pointers, slices or maps,
//     callers must not mutate them.
//   - A caller that leaves does not stop fn. An abandoned flight takes no
//     new callers; one that arrives for its key waits for it to return, and
//     fn never runs twice at once for one key.
//   - fn must not use its context after returning.
package singleflight
