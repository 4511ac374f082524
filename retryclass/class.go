package retryclass

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Class says what one failed (or successful) try means for the next one.
// The zero value is Success.
type Class uint8

const (
	// Success: 2xx, nil error. Record the result and return it.
	Success Class = iota
	// NotExecuted: the request provably did not take effect (connection
	// refused, DNS failure, 429, 503 with Retry-After). Safe to retry with
	// the same key for every effect kind.
	NotExecuted
	// MaybeExecuted: the request may have taken effect (timeouts, a
	// connection reset after the request was written, 500, 502, 504, any
	// unrecognised error). Retry only where the downstream absorbs repeats
	// (Keyed and Idempotent tools).
	MaybeExecuted
	// InFlight: 409, the same key is still being processed elsewhere. Wait
	// within the in-flight budget, then suppress.
	InFlight
	// Mismatch: 422, a local fingerprint mismatch or a Suppress marker.
	// Stop and record a suppression the model cannot override.
	Mismatch
	// Terminal: other 4xx, validation errors, a Permanent marker. A
	// definite failure; nothing happened. Hand the error to the model.
	Terminal
	// Canceled: the caller's context ended. Stop; do not retry. What the
	// interrupted try did is not known.
	Canceled
)

var classNames = [...]string{
	Success:       "success",
	NotExecuted:   "not-executed",
	MaybeExecuted: "maybe-executed",
	InFlight:      "in-flight",
	Mismatch:      "mismatch",
	Terminal:      "terminal",
	Canceled:      "canceled",
}

// String returns the class's stable name, the one journals store.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// ParseClass parses a class name as String writes it. An unknown name
// returns an error wrapping ErrUnknownClass.
func ParseClass(s string) (Class, error) {
	if i := slices.Index(classNames[:], s); i >= 0 {
		return Class(i), nil
	}
	return 0, fmt.Errorf("%w %q (want success, not-executed, maybe-executed, in-flight, mismatch, terminal or canceled)", ErrUnknownClass, s)
}

// Retryable reports whether a try of class c may be followed by another
// with the same key: NotExecuted, MaybeExecuted and InFlight (a
// MaybeExecuted try only where the tool's effect kind allows).
func (c Class) Retryable() bool {
	return c == NotExecuted || c == MaybeExecuted || c == InFlight
}

// Suppressing reports whether c ends in a suppression the model cannot
// override (InFlight once its budget is spent, and Mismatch).
func (c Class) Suppressing() bool {
	return c == InFlight || c == Mismatch
}

// Verdict is the classification of one try.
type Verdict struct {
	// Class is what the try means for the next one.
	Class Class
	// RetryAfter is the wait the server or tool asked for (Retry-After,
	// Retry-After-Ms, WithRetryAfter, an error's RetryAfter method); 0 if
	// none. Schedule.Next honours it, capped by Policy.MaxRetryAfter.
	RetryAfter time.Duration
	// Status is the HTTP status when known, else 0.
	Status int
}

// String formats v for logs: "not-executed status=503 retry-after=2s".
func (v Verdict) String() string {
	s := v.Class.String()
	if v.Status != 0 {
		s += " status=" + strconv.Itoa(v.Status)
	}
	if v.RetryAfter != 0 {
		s += " retry-after=" + v.RetryAfter.String()
	}
	return s
}
