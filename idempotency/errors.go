package idempotency

import "errors"

// ErrResponseTooLarge is returned by a protected handler's Write past
// Options.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("idempotency: response body exceeds MaxResponseBytes")

// ErrLeaseLost is the cause of a protected handler's context when its
// lease on the key was lost; its response is not recorded.
var ErrLeaseLost = errors.New("idempotency: lease on the key lost")

// ErrSignature is wrapped by an Options.Key function's error when a
// delivery's signature is missing or wrong: the middleware answers 401.
var ErrSignature = errors.New("idempotency: webhook signature invalid")
