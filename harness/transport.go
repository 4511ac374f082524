package harness

import (
	"net/http"
)

// Default header names used by Transport.
const (
	DefaultKeyHeader       = "Idempotency-Key"
	DefaultRequestIDHeader = "X-Request-Id"
)

// Transport is an http.RoundTripper that carries a call's idempotency key
// and attempt id downstream: requests made with a tool's context (or any
// context from WithKey) get the key in KeyHeader and the attempt id in
// RequestIDHeader. Headers the request already has are left alone, and
// requests without a key in their context pass through unchanged.
//
// Like http.Transport it does not interpret responses and does not retry:
// the harness does. Turn a response into a classified error with
// retryclass.ResponseError. The zero value is ready to use.
type Transport struct {
	// Base is the transport that sends the request; nil means
	// http.DefaultTransport.
	Base http.RoundTripper
	// KeyHeader names the key's header; empty means "Idempotency-Key".
	KeyHeader string
	// RequestIDHeader names the attempt id's header (for example
	// "PayPal-Request-Id"); empty means "X-Request-Id", "-" sends none.
	RequestIDHeader string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ai, ok := req.Context().Value(keyCtxKey).(*attemptInfo)
	if !ok {
		return base.RoundTrip(req)
	}
	keyHeader := t.KeyHeader
	if keyHeader == "" {
		keyHeader = DefaultKeyHeader
	}
	idHeader := t.RequestIDHeader
	if idHeader == "" {
		idHeader = DefaultRequestIDHeader
	}
	// A RoundTripper must not modify the caller's request.
	r2 := req.Clone(req.Context())
	if r2.Header.Get(keyHeader) == "" {
		r2.Header.Set(keyHeader, ai.key.String())
	}
	if idHeader != "-" && ai.attempt != "" && r2.Header.Get(idHeader) == "" {
		r2.Header.Set(idHeader, ai.attempt)
	}
	return base.RoundTrip(r2)
}
