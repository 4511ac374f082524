package retryclass

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// bodyExcerptLimit is how many bytes of an error response ResponseError
// reads: enough for a JSON error object, bounded against a huge body.
const bodyExcerptLimit = 512

// StatusError is a non-2xx HTTP response as an error. ResponseError makes
// one; tools may also build their own. Classify classifies it by Status and
// RetryAfter.
type StatusError struct {
	// Method and URL name the request; URL has no query or user info, which
	// may hold secrets.
	Method string
	URL    string
	// Status is the HTTP status code.
	Status int
	// RetryAfter is the wait the response asked for, 0 if none.
	RetryAfter time.Duration
	// Body is an excerpt (at most 512 bytes, valid UTF-8) of the response
	// body, for the error message.
	Body string
	// Keyed says the request carried an idempotency key (Idempotency-Key or
	// X-Idempotency-Key): a 417 to it is then a key mismatch.
	Keyed bool
}

// Error reads "POST http://host/path: 503 Service Unavailable (retry after
// 2s): body excerpt".
func (e *StatusError) Error() string {
	var b strings.Builder
	if e.Method != "" {
		b.WriteString(e.Method + " ")
	}
	if e.URL != "" {
		b.WriteString(e.URL + ": ")
	}
	b.WriteString(strconv.Itoa(e.Status))
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.RetryAfter > 0 {
		b.WriteString(" (retry after " + e.RetryAfter.String() + ")")
	}
	if e.Body != "" {
		b.WriteString(": " + e.Body)
	}
	return b.String()
}

// StatusCode returns e.Status; it is the interface Classify looks for in
// any error.
func (e *StatusError) StatusCode() int { return e.Status }

// ResponseError returns nil for a 2xx response and otherwise a *StatusError
// carrying the status, the Retry-After wait and an excerpt of the body.
//
// It reads at most 512 bytes of resp.Body and then replaces resp.Body with a
// reader that yields those bytes again followed by the rest, so the caller
// can still decode the whole body. It never closes the body: the caller owns
// it and closes it as usual. A nil resp returns ErrNilResponse.
func ResponseError(resp *http.Response) error {
	if resp == nil {
		return ErrNilResponse
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	e := &StatusError{Status: resp.StatusCode}
	if d, ok := ParseRetryAfter(resp.Header, time.Now()); ok {
		e.RetryAfter = d
	}
	if req := resp.Request; req != nil {
		e.Keyed = carriesKey(req)
		e.Method = req.Method
		if req.URL != nil {
			u := *req.URL
			u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
			e.URL = u.String()
		}
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		buf := make([]byte, bodyExcerptLimit)
		n, err := io.ReadFull(resp.Body, buf)
		buf = buf[:n]
		e.Body = excerpt(buf)
		var rest io.Reader = resp.Body
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		if err != nil { // body ended (or failed) inside the excerpt
			rest = errReader{err}
		}
		resp.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), Closer: resp.Body}
	}
	return e
}

// excerpt makes b a one-line, valid UTF-8 string for an error message.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD") // the limit may split a rune
	return strings.Join(strings.Fields(s), " ")
}

type replayBody struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// ParseRetryAfter reads the wait a response asks for. Retry-After-Ms
// (milliseconds, as some APIs send) wins over Retry-After, which is either
// delta-seconds or an HTTP-date taken relative to now. A date in the past
// gives (0, true). An absent or malformed header gives (0, false). Waits too
// large for a time.Duration are clamped to the largest one; Policy caps them
// far lower.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		ms, err := strconv.ParseFloat(v, 64)
		if err == nil && ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			return clampDuration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if strings.TrimLeft(v, "0123456789") == "" { // delta-seconds (v is not empty)
		s, err := strconv.ParseUint(v, 10, 64) // fails only past uint64
		if err != nil || s > math.MaxInt64/uint64(time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

func clampDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
