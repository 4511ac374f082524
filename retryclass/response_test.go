package retryclass_test

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "120"}, 2 * time.Minute, true},
		{map[string]string{"Retry-After": " 5 "}, 5 * time.Second, true},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "1.5"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "99999999999999999999999"}, 1<<63 - 1, true},
		{map[string]string{"Retry-After": "9223372037"}, 1<<63 - 1, true},
		{map[string]string{"Retry-After": "Sun, 29 Nov 2026 09:00:30 GMT"}, 30 * time.Second, true},
		{map[string]string{"Retry-After": "Sunday, 29-Nov-26 09:01:00 GMT"}, time.Minute, true},
		{map[string]string{"Retry-After": "Sun Nov 29 09:00:10 2026"}, 10 * time.Second, true},
		{map[string]string{"Retry-After": "Sun, 29 Nov 2026 08:00:00 GMT"}, 0, true}, // in the past
		{map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "12.5"}, 12500 * time.Microsecond, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second, true},
		{map[string]string{"Retry-After-Ms": "-5"}, 0, false},
		{map[string]string{"Retry-After-Ms": "NaN"}, 0, false},
		{map[string]string{"Retry-After-Ms": "Inf"}, 0, false},
		{map[string]string{"Retry-After-Ms": "1e300"}, 1<<63 - 1, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, val := range tt.header {
			h.Set(k, val)
		}
		got, ok := retryclass.ParseRetryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%v) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseRetryAfter checks that no header makes the parser panic or
// return a negative wait, and that delta-seconds round-trip.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "Sun, 29 Nov 2026 09:00:30 GMT", "1e300", "NaN", "", "18446744073709551616"} {
		f.Add(s, s)
	}
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		d, ok := retryclass.ParseRetryAfter(h, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v; negative", ra, ms, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, false; want 0 when not ok", ra, ms, d)
		}
		h.Del("Retry-After-Ms")
		d, ok = retryclass.ParseRetryAfter(h, now)
		if ok && d < 1<<63-1 && d%time.Second == 0 && !strings.ContainsAny(ra, ",: ") {
			// delta-seconds: formatting the wait back gives the same number
			h2 := http.Header{}
			h2.Set("Retry-After", itoa(int64(d/time.Second)))
			if d2, ok2 := retryclass.ParseRetryAfter(h2, now); d2 != d || !ok2 {
				t.Fatalf("round trip of %q: %v then %v, %v", ra, d, d2, ok2)
			}
		}
	})
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func response(status int, body string, header http.Header) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	u, _ := url.Parse("https://user:pw@pay.example/v1/charges?api_key=secret#frag")
	return &http.Response{
		StatusCode: status,
		Header:     header,
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    &http.Request{Method: http.MethodPost, URL: u},
	}
}

func TestResponseError(t *testing.T) {
	if err := retryclass.ResponseError(response(201, "ok", nil)); err != nil {
		t.Errorf("ResponseError(201) = %v; want nil", err)
	}
	if err := retryclass.ResponseError(nil); !errors.Is(err, retryclass.ErrNilResponse) {
		t.Errorf("ResponseError(nil) = %v; want ErrNilResponse", err)
	}

	resp := response(503, "{\"error\":\n  \"overloaded\"}\n", http.Header{"Retry-After": {"2"}})
	err := retryclass.ResponseError(resp)
	var se *retryclass.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("ResponseError(503) = %T; want *StatusError", err)
	}
	want := `POST https://pay.example/v1/charges: 503 Service Unavailable (retry after 2s): {"error": "overloaded"}`
	if got := err.Error(); got != want {
		t.Errorf("ResponseError(503).Error() = %q; want %q", got, want)
	}
	if se.Status != 503 || se.RetryAfter != 2*time.Second || se.StatusCode() != 503 {
		t.Errorf("StatusError = %+v; want status 503, retry after 2s", se)
	}
	body, _ := io.ReadAll(resp.Body)
	if got := string(body); got != "{\"error\":\n  \"overloaded\"}\n" {
		t.Errorf("body after ResponseError = %q; want the whole body again", got)
	}

	// A large body: at most 512 bytes are read for the message, and the
	// caller still reads all of it.
	big := strings.Repeat("é", 2000) // 4000 bytes; the limit splits a rune
	resp = response(500, big, nil)
	err = retryclass.ResponseError(resp)
	errors.As(err, &se)
	if n := len(se.Body); n > 512+3 || n < 500 {
		t.Errorf("len(StatusError.Body) = %d; want about 512", n)
	}
	if strings.ContainsRune(se.Body, '\uFFFD') && !strings.HasSuffix(se.Body, "\uFFFD") {
		t.Errorf("StatusError.Body has a replacement rune inside: %q", se.Body)
	}
	body, _ = io.ReadAll(resp.Body)
	if string(body) != big {
		t.Errorf("body after ResponseError: %d bytes; want the original %d", len(body), len(big))
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("Close after ResponseError = %v", err)
	}

	// No body, no request.
	err = retryclass.ResponseError(&http.Response{StatusCode: 404, Header: http.Header{}, Body: http.NoBody})
	if got, want := err.Error(), "404 Not Found"; got != want {
		t.Errorf("ResponseError(404, no body).Error() = %q; want %q", got, want)
	}
}

// closeCounter records whether the body was closed.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestResponseErrorDoesNotClose(t *testing.T) {
	cc := &closeCounter{Reader: strings.NewReader("nope")}
	resp := response(400, "", nil)
	resp.Body = cc
	retryclass.ResponseError(resp)
	if cc.closed != 0 {
		t.Fatalf("ResponseError closed the body %d times; want 0 (the caller owns it)", cc.closed)
	}
	resp.Body.Close()
	if cc.closed != 1 {
		t.Fatalf("closing the replaced body closed the original %d times; want 1", cc.closed)
	}
}
