package retryclass

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// statusCoder is implemented by errors that carry an HTTP status.
type statusCoder interface{ StatusCode() int }

// retryAfterer is implemented by errors that carry a requested wait.
type retryAfterer interface{ RetryAfter() time.Duration }

// Classify classifies the error a try returned, without knowing the
// caller's context. nil is Success. The first rule that matches wins:
//
//  1. a marker (Permanent, MarkNotExecuted, MarkMaybeExecuted, Suppress) anywhere
//     in err's chain; the outermost wins;
//  2. an HTTP status: a *StatusError or any error with a StatusCode() int
//     method, classified as ClassifyResponse does (an error that carries a
//     2xx status is MaybeExecuted: the request succeeded but something
//     after it failed);
//  3. context.Canceled is Canceled; context.DeadlineExceeded is
//     MaybeExecuted (use ClassifyContext to tell whose context it was);
//  4. network errors, as http.Client returns them wrapped in *url.Error:
//     DNS errors, any error of a dial, and connection refused are
//     NotExecuted; a certificate that failed verification is Terminal; read
//     and write errors, connection resets, io.EOF, io.ErrUnexpectedEOF and
//     timeouts are MaybeExecuted;
//  5. anything else is MaybeExecuted: from an arbitrary tool we cannot
//     prove that nothing happened, and assuming so could double an effect.
//
// Verdict.RetryAfter is taken from the first error in the chain with a
// RetryAfter() time.Duration method (WithRetryAfter) or from a
// *StatusError, and Verdict.Status from the status found in rule 2.
func Classify(err error) Verdict {
	if err == nil {
		return Verdict{Class: Success}
	}
	v, _ := classifyDefinite(err)
	if v.Class != Success {
		return v
	}
	switch {
	case errors.Is(err, context.Canceled):
		v.Class = Canceled
	default:
		v.Class = classifyTransport(err)
	}
	return v
}

// ClassifyContext classifies err knowing the caller's context: the one
// whose end means "stop", as opposed to a timeout the tool set itself.
//
// nil is Success even when callerCtx is done: the try finished, and its
// result must be recorded. A definite answer (a marker or an HTTP status)
// also wins over callerCtx being done, because it says what the try did;
// Schedule.Next still stops once callerCtx is done. Otherwise, if callerCtx
// is done the verdict is Canceled. A context.DeadlineExceeded or
// context.Canceled while callerCtx is live came from the tool's own
// timeout or cancellation, after the request may have been sent, and is
// MaybeExecuted. Everything else is classified as Classify does.
func ClassifyContext(callerCtx context.Context, err error) Verdict {
	if err == nil {
		return Verdict{Class: Success}
	}
	v, definite := classifyDefinite(err)
	if definite {
		return v
	}
	if callerCtx != nil && callerCtx.Err() != nil {
		v.Class = Canceled
		return v
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		v.Class = MaybeExecuted
		return v
	}
	v.Class = classifyTransport(err)
	return v
}

// classifyDefinite applies the rules that do not depend on context: markers
// and statuses. It always fills RetryAfter and Status; definite reports
// whether v.Class was decided.
func classifyDefinite(err error) (v Verdict, definite bool) {
	var se *StatusError
	hasSE := errors.As(err, &se)
	var ra retryAfterer
	if errors.As(err, &ra) {
		v.RetryAfter = max(ra.RetryAfter(), 0)
	} else if hasSE {
		v.RetryAfter = max(se.RetryAfter, 0)
	}
	var sc statusCoder
	if errors.As(err, &sc) {
		v.Status = sc.StatusCode()
	}
	var m *classMarker
	if errors.As(err, &m) {
		v.Class = m.class
		return v, true
	}
	if v.Status != 0 {
		v.Class = classifyStatus(v.Status, v.RetryAfter > 0)
		if v.Class == Success {
			v.Class = MaybeExecuted // a failure after a 2xx
		}
		return v, true
	}
	return v, false
}

// classifyTransport classifies network and I/O errors; unknown errors are
// MaybeExecuted.
func classifyTransport(err error) Class {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return NotExecuted // no address, no connection, no request
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return NotExecuted // the connection never opened
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return NotExecuted
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return Terminal // the request was never sent; retrying will not fix a certificate
	}
	// Everything below may have happened after the request was written.
	return MaybeExecuted
}

// ClassifyResponse classifies an HTTP response by its status and headers.
//
//	2xx                              Success
//	408, 425, 429                    NotExecuted (the server did not process it)
//	503 with Retry-After             NotExecuted
//	503 without Retry-After          MaybeExecuted
//	409                              InFlight
//	422                              Mismatch
//	501, 505                         Terminal
//	other 1xx, 3xx, 4xx              Terminal
//	500, 502, 504, other 5xx         MaybeExecuted
//	anything outside 100–599         MaybeExecuted
//
// 503 without Retry-After is MaybeExecuted because a proxy may send it
// after the origin began the work; a tool whose server is known to send 503
// only before executing can say so in Policy.Classify. "With Retry-After"
// means a wait above zero, here and in Classify, so that a response and its
// ResponseError classify alike (a StatusError cannot tell "Retry-After: 0"
// from no header). A nil resp is
// MaybeExecuted. RetryAfter is read from Retry-After-Ms and Retry-After on
// any status.
func ClassifyResponse(resp *http.Response) Verdict {
	if resp == nil {
		return Verdict{Class: MaybeExecuted}
	}
	d, _ := ParseRetryAfter(resp.Header, time.Now())
	return Verdict{
		Class:      classifyStatus(resp.StatusCode, d > 0),
		RetryAfter: d,
		Status:     resp.StatusCode,
	}
}

// classifyStatus is the status table of ClassifyResponse.
func classifyStatus(status int, hasRetryAfter bool) Class {
	switch {
	case status < 100 || status > 599:
		return MaybeExecuted
	case status >= 200 && status <= 299:
		return Success
	}
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return NotExecuted
	case http.StatusServiceUnavailable:
		if hasRetryAfter {
			return NotExecuted
		}
		return MaybeExecuted
	case http.StatusConflict:
		return InFlight
	case http.StatusUnprocessableEntity:
		return Mismatch
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return Terminal
	}
	if status >= 500 {
		return MaybeExecuted
	}
	return Terminal
}
