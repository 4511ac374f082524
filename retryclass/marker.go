package retryclass

import "time"

// classMarker carries a tool's own verdict on its error; the outermost
// wins.
type classMarker struct {
	err   error
	class Class
}

func (e *classMarker) Error() string { return e.err.Error() }
func (e *classMarker) Unwrap() error { return e.err }

func mark(err error, c Class) error {
	if err == nil {
		return nil
	}
	return &classMarker{err: err, class: c}
}

// Permanent marks err as a definite failure: Classify reports Terminal and
// nothing is retried. Use it for validation errors and refusals the model
// may correct with a different input. Permanent(nil) is nil.
func Permanent(err error) error { return mark(err, Terminal) }

// MarkNotExecuted marks err as one that provably did not take effect: Classify
// reports NotExecuted and the try may be repeated for every effect kind.
// Mark only what you can prove. MarkNotExecuted(nil) is nil.
func MarkNotExecuted(err error) error { return mark(err, NotExecuted) }

// MarkMaybeExecuted marks err as one after which the effect may have happened:
// Classify reports MaybeExecuted. This is also what an unmarked,
// unrecognised error gets; mark it to override a status or network
// classification. MarkMaybeExecuted(nil) is nil.
func MarkMaybeExecuted(err error) error { return mark(err, MaybeExecuted) }

// Suppress marks err as a stop the model cannot override: Classify reports
// Mismatch, the harness records a suppression and the model is told not to
// retry or alter the input. Suppress(nil) is nil.
func Suppress(err error) error { return mark(err, Mismatch) }

// retryAfterError carries a wait asked for by a tool. It does not set a
// class; it combines with any marker or status.
type retryAfterError struct {
	err error
	d   time.Duration
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.d }

// WithRetryAfter attaches a wait of d before the next try to err. It does
// not change err's class; combine it with MarkNotExecuted for a rate limit the
// tool detected itself. A negative d is taken as 0. WithRetryAfter(nil, d)
// is nil.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, d: max(d, 0)}
}
