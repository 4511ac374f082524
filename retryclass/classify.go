package retryclass

import (
	"context"
	"crypto/tls"
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
func Classify(err error) Verdict { return classify(context.Background(), err, false) }

// ClassifyContext classifies err knowing the caller's context: the one
// whose end means "stop", as opposed to a timeout the tool set itself.
// nil, a marker and an HTTP status classify as in Classify even when
// callerCtx is done: they say what the try did. Otherwise a done callerCtx
// is Canceled, and a context error while callerCtx is live (the tool's own
// timeout, after the request may have been sent) is MaybeExecuted.
func ClassifyContext(callerCtx context.Context, err error) Verdict {
	return classify(callerCtx, err, true)
}

// classify is ClassifyContext when withCtx, else Classify.
func classify(callerCtx context.Context, err error, withCtx bool) Verdict {
	if err == nil {
		return Verdict{Class: Success}
	}
	var f facts
	f.walk(err)
	v, definite := f.definite()
	switch {
	case definite:
	case withCtx && callerCtx != nil && callerCtx.Err() != nil, !withCtx && f.canceled:
		v.Class = Canceled
	case withCtx && (f.canceled || f.deadline):
		v.Class = MaybeExecuted
	default:
		v.Class = f.transport()
	}
	return v
}

// facts is what one walk of an error tree finds, each field the first
// match in errors.As order (pre-order, depth first): one walk with type
// switches instead of a dozen errors.As calls, which allocate.
type facts struct {
	marker     *classMarker
	retryAfter retryAfterer
	status     statusCoder
	statusErr  *StatusError

	canceled, deadline bool // context.Canceled, context.DeadlineExceeded
	notExecuted        bool // a DNS error, a dial error or ECONNREFUSED
	certificate        bool // a failed certificate verification
}

func (f *facts) walk(err error) {
	for err != nil {
		f.visit(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				f.walk(e)
			}
			return
		default:
			return
		}
	}
}

func (f *facts) visit(err error) {
	switch e := err.(type) {
	case *classMarker:
		if f.marker == nil {
			f.marker = e
		}
	case *StatusError:
		if f.statusErr == nil {
			f.statusErr = e
		}
	case *net.DNSError:
		f.notExecuted = true // no address, no connection, no request
	case *net.OpError:
		if e.Op == "dial" {
			f.notExecuted = true // the connection never opened
		}
	case syscall.Errno:
		if e == syscall.ECONNREFUSED {
			f.notExecuted = true
		}
	case *tls.CertificateVerificationError:
		f.certificate = true
	}
	if ra, ok := err.(retryAfterer); ok && f.retryAfter == nil {
		f.retryAfter = ra
	}
	if sc, ok := err.(statusCoder); ok && f.status == nil {
		f.status = sc
	}
	f.canceled = f.canceled || is(err, context.Canceled)
	f.deadline = f.deadline || is(err, context.DeadlineExceeded)
}

// is is one step of errors.Is: err itself, not its chain.
func is(err, target error) bool {
	if err == target {
		return true
	}
	x, ok := err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}

// definite applies the rules that do not depend on context (markers and
// statuses), always filling RetryAfter and Status.
func (f *facts) definite() (v Verdict, definite bool) {
	if f.retryAfter != nil {
		v.RetryAfter = max(f.retryAfter.RetryAfter(), 0)
	} else if f.statusErr != nil {
		v.RetryAfter = max(f.statusErr.RetryAfter, 0)
	}
	if f.status != nil {
		v.Status = f.status.StatusCode()
	}
	if f.marker != nil {
		v.Class = f.marker.class
		return v, true
	}
	if v.Status != 0 {
		keyed := f.statusErr != nil && f.statusErr.Keyed
		v.Class = classifyStatus(v.Status, v.RetryAfter > 0, keyed)
		if v.Class == Success {
			v.Class = MaybeExecuted // a failure after a 2xx
		}
		return v, true
	}
	return v, false
}

// transport classifies network and I/O errors; unknown errors are
// MaybeExecuted.
func (f *facts) transport() Class {
	switch {
	case f.notExecuted:
		return NotExecuted
	case f.certificate:
		return Terminal // the request was never sent; retrying will not fix a certificate
	}
	// Anything else may have happened after the request was written.
	return MaybeExecuted
}

// ClassifyResponse classifies an HTTP response by its status and headers.
// A nil resp is MaybeExecuted; RetryAfter is read from Retry-After-Ms and
// Retry-After on any status.
//
//	2xx                              Success
//	408, 425, 429                    NotExecuted (the server did not process it)
//	503 with Retry-After             NotExecuted
//	503 without Retry-After          MaybeExecuted
//	409                              InFlight
//	422                              Mismatch
//	417 to a request with a key      Mismatch
//	501, 505                         Terminal
//	other 1xx, 3xx, 4xx              Terminal
//	500, 502, 504, other 5xx         MaybeExecuted
//	anything outside 100–599         MaybeExecuted
//
// 503 without Retry-After is MaybeExecuted because a proxy may send it
// after the origin began (Policy.Classify can say otherwise). "With
// Retry-After" means a wait above zero, here and in Classify, so that a
// response and its ResponseError classify alike. A 417 to a request with
// Idempotency-Key (or X-Idempotency-Key) is a mismatch: some middleware
// (express-idempotency, for one) refuses a re-used key so.
func ClassifyResponse(resp *http.Response) Verdict {
	if resp == nil {
		return Verdict{Class: MaybeExecuted}
	}
	d, _ := ParseRetryAfter(resp.Header, time.Now())
	return Verdict{
		Class:      classifyStatus(resp.StatusCode, d > 0, carriesKey(resp.Request)),
		RetryAfter: d,
		Status:     resp.StatusCode,
	}
}

// carriesKey reports whether req asked the server to deduplicate by key.
func carriesKey(req *http.Request) bool {
	return req != nil && (req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "")
}

// classifyStatus is the status table of ClassifyResponse; keyed says the
// request carried an idempotency key.
func classifyStatus(status int, hasRetryAfter, keyed bool) Class {
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
	case http.StatusExpectationFailed:
		if keyed {
			return Mismatch
		}
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return Terminal
	}
	if status >= 500 {
		return MaybeExecuted
	}
	return Terminal
}
