package downstream

import (
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// Default header names used by Transport.
const (
	DefaultKeyHeader        = "Idempotency-Key"
	DefaultRequestIDHeader  = "X-Request-Id"
	DefaultUnkeyedKeyHeader = "X-Agentonce-Key"
)

// Transport is an http.RoundTripper that carries a call's idempotency key
// and attempt id downstream: requests made with a tool's context (or any
// context from NewContext) get the key in KeyHeader and the attempt id in
// RequestIDHeader. Headers the request already has are left alone, and
// requests without a key in their context pass through unchanged.
//
// An Unkeyed tool's requests carry the key in UnkeyedKeyHeader instead, for
// tracing and for its Reconcile hook to ask about, never in Idempotency-Key:
// net/http resends a request on a reused connection that died after sending
// only when it is replayable, and a request carrying Idempotency-Key (or
// X-Idempotency-Key) counts as replayable. For a downstream that does not
// deduplicate, that resend would be a second effect the harness never
// decided. Keyed and Idempotent requests may be resent so: their
// downstream, or their nature, absorbs it (the journal does not count such
// a resend as an attempt). The Transport notes such a resend (an
// httptrace hook), and the harness then never takes a "not executed"
// answer of that attempt for the first send's: it is maybe executed.
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
	// UnkeyedKeyHeader names the key's header on an Unkeyed tool's
	// requests; empty means "X-Agentonce-Key", "-" sends none. A name that
	// net/http treats as replayable (Idempotency-Key, X-Idempotency-Key) is
	// refused with an error.
	UnkeyedKeyHeader string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ac, ok := fromContext(req.Context())
	if !ok {
		return base.RoundTrip(req)
	}
	ai := &ac.a
	keyHeader := t.KeyHeader
	if keyHeader == "" {
		keyHeader = DefaultKeyHeader
	}
	if ai.Unkeyed {
		keyHeader = t.UnkeyedKeyHeader
		switch http.CanonicalHeaderKey(keyHeader) {
		case "":
			keyHeader = DefaultUnkeyedKeyHeader
		case "Idempotency-Key", "X-Idempotency-Key":
			return nil, fmt.Errorf("downstream.Transport: UnkeyedKeyHeader %q would let net/http resend an unkeyed tool's request", keyHeader)
		}
	}
	idHeader := t.RequestIDHeader
	if idHeader == "" {
		idHeader = DefaultRequestIDHeader
	}
	// A RoundTripper must not modify the caller's request.
	r2 := req.Clone(req.Context())
	if keyHeader != "-" && r2.Header.Get(keyHeader) == "" {
		r2.Header.Set(keyHeader, ai.Key.String())
	}
	if idHeader != "-" && ai.ID != "" && r2.Header.Get(idHeader) == "" {
		r2.Header.Set(idHeader, ai.ID)
	}
	if ai.Unkeyed {
		return base.RoundTrip(r2)
	}
	// net/http may send a keyed request twice (see above); the attempt
	// learns of it, so that a "not executed" answer, which may be the
	// resend's, is not taken for the first send's.
	var writes atomic.Int32
	r2 = r2.WithContext(httptrace.WithClientTrace(r2.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if writes.Add(1) > 1 {
				ac.resent.Store(true)
			}
		},
	}))
	return base.RoundTrip(r2)
}
