package notify

import "errors"

// ErrSignature is returned by Verify when the signature header is
// missing, malformed, too old, or does not match the body.
var ErrSignature = errors.New("notify: bad signature")
