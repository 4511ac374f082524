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

// Transport is an http.RoundTripper that sends a tool attempt's key in
// KeyHeader and its id in RequestIDHeader, leaving headers the request has
// alone; requests without a key in their context pass through.
//
// An Unkeyed tool's requests carry the key in UnkeyedKeyHeader instead:
// net/http resends a request carrying Idempotency-Key on a reused
// connection that died after sending, a second effect for a downstream
// that does not deduplicate. Other resends are noted, so that a "not
// executed" answer of the attempt counts as maybe executed. The zero value
// is ready to use.
type Transport struct {
	// Base sends the request; nil means http.DefaultTransport.
	Base http.RoundTripper
	// KeyHeader names the key's header; empty means "Idempotency-Key".
	KeyHeader string
	// RequestIDHeader names the attempt id's header (for example
	// "PayPal-Request-Id"); empty means "X-Request-Id", "-" sends none.
	RequestIDHeader string
	// UnkeyedKeyHeader names the key's header on an Unkeyed tool's
	// requests; empty means "X-Agentonce-Key", "-" sends none; a name
	// net/http treats as replayable is refused.
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
	var writes atomic.Int32 // a second write is net/http's resend
	// A resend is known by its connection, asked for after a write: it may
	// fail before writing anything (its dial refused), and its error, "not
	// executed", is not the first send's.
	r2 = r2.WithContext(httptrace.WithClientTrace(r2.Context(), &httptrace.ClientTrace{
		GetConn: func(string) {
			if writes.Load() > 0 {
				ac.resent.Store(true)
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { writes.Add(1) },
	}))
	return base.RoundTrip(r2)
}
