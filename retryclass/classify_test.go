package retryclass_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

// timeoutError is a net.Error whose Timeout is true, like the ones a
// read deadline produces.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// toolStatusError is a tool's own error type carrying a status and a wait.
type toolStatusError struct {
	code int
	wait time.Duration
}

func (e toolStatusError) Error() string             { return fmt.Sprintf("tool: status %d", e.code) }
func (e toolStatusError) StatusCode() int           { return e.code }
func (e toolStatusError) RetryAfter() time.Duration { return e.wait }

// clientErr wraps err as http.Client.Do does.
func clientErr(err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/charge", Err: err}
}

func dialErr(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: err}
}

func readErr(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Err: err}
}

var errBoom = errors.New("boom")

func TestClassify(t *testing.T) {
	refused := &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	reset := &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	dns := &net.DNSError{Err: "no such host", Name: "pay.invalid", IsNotFound: true}
	cert := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	se := func(status int, ra time.Duration) error {
		return &retryclass.StatusError{Method: "POST", URL: "http://x/charge", Status: status, RetryAfter: ra}
	}
	tests := []struct {
		name string
		err  error
		want retryclass.Verdict
	}{
		{"nil", nil, v(retryclass.Success, 0, 0)},

		// network errors, bare and as http.Client returns them
		{"dial refused", clientErr(dialErr(refused)), v(retryclass.NotExecuted, 0, 0)},
		{"refused without OpError", refused, v(retryclass.NotExecuted, 0, 0)},
		{"dial timeout", clientErr(dialErr(timeoutError{})), v(retryclass.NotExecuted, 0, 0)},
		{"dns", clientErr(dialErr(dns)), v(retryclass.NotExecuted, 0, 0)},
		{"dns bare", dns, v(retryclass.NotExecuted, 0, 0)},
		{"certificate", clientErr(cert), v(retryclass.Terminal, 0, 0)},
		{"read reset", clientErr(readErr(reset)), v(retryclass.MaybeExecuted, 0, 0)},
		{"write error", clientErr(&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), v(retryclass.MaybeExecuted, 0, 0)},
		{"read timeout", clientErr(readErr(timeoutError{})), v(retryclass.MaybeExecuted, 0, 0)},
		{"unexpected EOF", clientErr(io.ErrUnexpectedEOF), v(retryclass.MaybeExecuted, 0, 0)},
		{"EOF", clientErr(io.EOF), v(retryclass.MaybeExecuted, 0, 0)},
		{"net.Error timeout", timeoutError{}, v(retryclass.MaybeExecuted, 0, 0)},

		// context errors without the caller's context
		{"canceled", fmt.Errorf("charge: %w", context.Canceled), v(retryclass.Canceled, 0, 0)},
		{"deadline", clientErr(context.DeadlineExceeded), v(retryclass.MaybeExecuted, 0, 0)},

		// unknown
		{"unknown", errBoom, v(retryclass.MaybeExecuted, 0, 0)},

		// statuses carried by errors
		{"StatusError 429", se(429, 0), v(retryclass.NotExecuted, 0, 429)},
		{"StatusError 429 wait", se(429, 2*time.Second), v(retryclass.NotExecuted, 2*time.Second, 429)},
		{"StatusError 503 wait", se(503, time.Second), v(retryclass.NotExecuted, time.Second, 503)},
		{"StatusError 503", se(503, 0), v(retryclass.MaybeExecuted, 0, 503)},
		{"StatusError 500", se(500, 0), v(retryclass.MaybeExecuted, 0, 500)},
		{"StatusError 502", se(502, 0), v(retryclass.MaybeExecuted, 0, 502)},
		{"StatusError 504", se(504, 0), v(retryclass.MaybeExecuted, 0, 504)},
		{"StatusError 409", se(409, 0), v(retryclass.InFlight, 0, 409)},
		{"StatusError 422", se(422, 0), v(retryclass.Mismatch, 0, 422)},
		{"StatusError 400", se(400, 0), v(retryclass.Terminal, 0, 400)},
		{"StatusError 404", se(404, 0), v(retryclass.Terminal, 0, 404)},
		{"StatusError 200", se(200, 0), v(retryclass.MaybeExecuted, 0, 200)},
		{"wrapped StatusError", fmt.Errorf("charge 8812: %w", se(422, 0)), v(retryclass.Mismatch, 0, 422)},
		{"tool status 409", toolStatusError{409, 0}, v(retryclass.InFlight, 0, 409)},
		{"tool status 503 wait", fmt.Errorf("x: %w", toolStatusError{503, 3 * time.Second}), v(retryclass.NotExecuted, 3*time.Second, 503)},
		{"status beats network", fmt.Errorf("%w; %w", se(422, 0), refused), v(retryclass.Mismatch, 0, 422)},

		// markers
		{"Permanent", retryclass.Permanent(errBoom), v(retryclass.Terminal, 0, 0)},
		{"Permanent wrapped", fmt.Errorf("validate: %w", retryclass.Permanent(errBoom)), v(retryclass.Terminal, 0, 0)},
		{"Permanent over refused", retryclass.Permanent(clientErr(dialErr(refused))), v(retryclass.Terminal, 0, 0)},
		{"MarkNotExecuted", retryclass.MarkNotExecuted(errBoom), v(retryclass.NotExecuted, 0, 0)},
		{"MarkMaybeExecuted over 429", retryclass.MarkMaybeExecuted(se(429, 0)), v(retryclass.MaybeExecuted, 0, 429)},
		{"Suppress", retryclass.Suppress(errBoom), v(retryclass.Mismatch, 0, 0)},
		{"Suppress over 500", fmt.Errorf("x: %w", retryclass.Suppress(se(500, 0))), v(retryclass.Mismatch, 0, 500)},
		{"outermost marker wins", retryclass.Permanent(retryclass.MarkNotExecuted(errBoom)), v(retryclass.Terminal, 0, 0)},
		{"marker over canceled", retryclass.MarkNotExecuted(context.Canceled), v(retryclass.NotExecuted, 0, 0)},
		{"WithRetryAfter alone", retryclass.WithRetryAfter(errBoom, time.Second), v(retryclass.MaybeExecuted, time.Second, 0)},
		{"WithRetryAfter NotExecuted", retryclass.MarkNotExecuted(retryclass.WithRetryAfter(errBoom, 5*time.Second)), v(retryclass.NotExecuted, 5*time.Second, 0)},
		{"WithRetryAfter negative", retryclass.WithRetryAfter(errBoom, -time.Second), v(retryclass.MaybeExecuted, 0, 0)},
		{"WithRetryAfter over StatusError", retryclass.WithRetryAfter(se(429, time.Second), 4*time.Second), v(retryclass.NotExecuted, 4*time.Second, 429)},
		{"WithRetryAfter makes 503 NotExecuted", retryclass.WithRetryAfter(se(503, 0), time.Second), v(retryclass.NotExecuted, time.Second, 503)},
		{"joined", errors.Join(errBoom, retryclass.Permanent(errBoom)), v(retryclass.Terminal, 0, 0)},
		{"joined: first marker in errors.As order", errors.Join(retryclass.MarkNotExecuted(errBoom), retryclass.Permanent(errBoom)), v(retryclass.NotExecuted, 0, 0)},
		{"joined: refused in second branch", errors.Join(errBoom, clientErr(dialErr(refused))), v(retryclass.NotExecuted, 0, 0)},
		{"joined: status in second branch", errors.Join(errBoom, se(409, 0)), v(retryclass.InFlight, 0, 409)},
		{"ErrNilResponse", retryclass.ErrNilResponse, v(retryclass.MaybeExecuted, 0, 0)},
	}
	for _, tt := range tests {
		if got := retryclass.Classify(tt.err); got != tt.want {
			t.Errorf("%s: Classify(%v) = %v; want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func v(c retryclass.Class, ra time.Duration, status int) retryclass.Verdict {
	return retryclass.Verdict{Class: c, RetryAfter: ra, Status: status}
}

func TestClassifyContext(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want retryclass.Verdict
	}{
		{"nil, live", live, nil, v(retryclass.Success, 0, 0)},
		{"nil, caller done: the try finished", done, nil, v(retryclass.Success, 0, 0)},
		{"tool's own timeout", live, fmt.Errorf("charge: %w", context.DeadlineExceeded), v(retryclass.MaybeExecuted, 0, 0)},
		{"tool's own cancel", live, clientErr(context.Canceled), v(retryclass.MaybeExecuted, 0, 0)},
		{"caller canceled", done, clientErr(context.Canceled), v(retryclass.Canceled, 0, 0)},
		{"caller deadline", expired, clientErr(context.DeadlineExceeded), v(retryclass.Canceled, 0, 0)},
		{"caller done, unknown error", done, errBoom, v(retryclass.Canceled, 0, 0)},
		{"caller done, refused", done, clientErr(dialErr(syscall.ECONNREFUSED)), v(retryclass.Canceled, 0, 0)},
		{"caller done, status is definite", done, &retryclass.StatusError{Status: 422}, v(retryclass.Mismatch, 0, 422)},
		{"caller done, marker is definite", done, retryclass.Permanent(errBoom), v(retryclass.Terminal, 0, 0)},
		{"live, refused", live, clientErr(dialErr(syscall.ECONNREFUSED)), v(retryclass.NotExecuted, 0, 0)},
		{"nil ctx", nil, errBoom, v(retryclass.MaybeExecuted, 0, 0)},
	}
	for _, tt := range tests {
		if got := retryclass.ClassifyContext(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: ClassifyContext(ctx, %v) = %v; want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestClassifyResponseTable(t *testing.T) {
	tests := []struct {
		status int
		header http.Header
		want   retryclass.Verdict
	}{
		{200, nil, v(retryclass.Success, 0, 200)},
		{201, nil, v(retryclass.Success, 0, 201)},
		{204, nil, v(retryclass.Success, 0, 204)},
		{304, nil, v(retryclass.Terminal, 0, 304)},
		{400, nil, v(retryclass.Terminal, 0, 400)},
		{401, nil, v(retryclass.Terminal, 0, 401)},
		{403, nil, v(retryclass.Terminal, 0, 403)},
		{404, nil, v(retryclass.Terminal, 0, 404)},
		{408, nil, v(retryclass.NotExecuted, 0, 408)},
		{409, nil, v(retryclass.InFlight, 0, 409)},
		{409, http.Header{"Retry-After": {"1"}}, v(retryclass.InFlight, time.Second, 409)},
		{422, nil, v(retryclass.Mismatch, 0, 422)},
		{425, nil, v(retryclass.NotExecuted, 0, 425)},
		{429, nil, v(retryclass.NotExecuted, 0, 429)},
		{429, http.Header{"Retry-After": {"7"}}, v(retryclass.NotExecuted, 7*time.Second, 429)},
		{429, http.Header{"Retry-After-Ms": {"250"}}, v(retryclass.NotExecuted, 250*time.Millisecond, 429)},
		{500, nil, v(retryclass.MaybeExecuted, 0, 500)},
		{501, nil, v(retryclass.Terminal, 0, 501)},
		{502, nil, v(retryclass.MaybeExecuted, 0, 502)},
		{503, nil, v(retryclass.MaybeExecuted, 0, 503)},
		{503, http.Header{"Retry-After": {"2"}}, v(retryclass.NotExecuted, 2*time.Second, 503)},
		{503, http.Header{"Retry-After": {"0"}}, v(retryclass.MaybeExecuted, 0, 503)},
		{503, http.Header{"Retry-After-Ms": {"1500"}}, v(retryclass.NotExecuted, 1500*time.Millisecond, 503)},
		{503, http.Header{"Retry-After": {"soon"}}, v(retryclass.MaybeExecuted, 0, 503)},
		{504, nil, v(retryclass.MaybeExecuted, 0, 504)},
		{505, nil, v(retryclass.Terminal, 0, 505)},
		{507, nil, v(retryclass.MaybeExecuted, 0, 507)},
		{0, nil, v(retryclass.MaybeExecuted, 0, 0)},
		{600, nil, v(retryclass.MaybeExecuted, 0, 600)},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: tt.status, Header: tt.header}
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		if got := retryclass.ClassifyResponse(resp); got != tt.want {
			t.Errorf("ClassifyResponse(%d %v) = %v; want %v", tt.status, tt.header, got, tt.want)
		}
	}
	if got, want := retryclass.ClassifyResponse(nil), v(retryclass.MaybeExecuted, 0, 0); got != want {
		t.Errorf("ClassifyResponse(nil) = %v; want %v", got, want)
	}
}
