package keyderive

import (
	"errors"
	"strconv"
)

// Errors returned while canonicalizing input, each wrapped in a
// *SyntaxError that names the byte offset; test for them with errors.Is.
var (
	// ErrTooLarge is returned when the input is longer than
	// Options.MaxBytes. Nothing is parsed.
	ErrTooLarge = errors.New("input too large")
	// ErrTooDeep is returned when arrays and objects nest deeper than
	// Options.MaxDepth.
	ErrTooDeep = errors.New("input nested too deeply")
	// ErrSyntax is returned when the input is not a single valid JSON value
	// (RFC 8259).
	ErrSyntax = errors.New("invalid JSON")
	// ErrDuplicateKey is returned when an object has the same member name
	// twice (after unescaping); RFC 8785 has no canonical form for it.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrInvalidUTF8 is returned when a string holds bytes that are not
	// UTF-8, or a \u escape names an unpaired UTF-16 surrogate.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrNumber is returned when a number cannot be canonicalized: its
	// magnitude is beyond the float64 range (JSON has no NaN or Infinity).
	ErrNumber = errors.New("number out of range")
)

// Errors returned by NewNormalizer and Deriver.
var (
	// ErrSchema is returned by NewNormalizer when the schema is not JSON,
	// or uses the supported keywords (type, properties, required, default)
	// in a shape it cannot use, or a volatile path is empty.
	ErrSchema = errors.New("invalid tool input schema")
	// ErrNilNamespace is returned by Deriver methods when Namespace is the
	// nil UUID: keys under a well-known namespace are guessable by anyone.
	ErrNilNamespace = errors.New("namespace is the nil UUID")
)

// SyntaxError reports where and why input could not be canonicalized.
// Unwrap returns one of the sentinel errors above.
type SyntaxError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int64
	// Msg says what was wrong there, e.g. `invalid character 'x' in number`.
	Msg string
	// Err is the sentinel: one of the errors above.
	Err error
}

// Error says what was wrong and at which byte offset, e.g.
// `keyderive: duplicate object member name "a" at byte offset 7 (duplicate object key)`.
func (e *SyntaxError) Error() string {
	return "keyderive: " + e.Msg + " at byte offset " + strconv.FormatInt(e.Offset, 10) + " (" + e.Err.Error() + ")"
}

// Unwrap returns the sentinel error, for errors.Is.
func (e *SyntaxError) Unwrap() error { return e.Err }
