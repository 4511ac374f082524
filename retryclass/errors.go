package retryclass

import "errors"

// Errors returned by this package's parsers and helpers.
var (
	// ErrUnknownClass is returned by ParseClass when a name is not one that
	// Class.String writes. It is wrapped with the offending name.
	ErrUnknownClass = errors.New("unknown retry class")

	// ErrNilResponse is returned by ResponseError when it is given a nil
	// *http.Response. Classify reports it as MaybeExecuted: with no
	// response we cannot tell what the server did.
	ErrNilResponse = errors.New("nil http response")
)
