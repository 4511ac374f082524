package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentonce/agentonce/keyderive"
)

// requestKey returns the request's idempotency key: Idempotency-Key, or
// X-Agentonce-Key when it is absent. ok is false when neither is sent. The
// draft makes the value a Structured Field string ("…"); the bare token
// that Stripe's clients and the harness send is accepted too.
func requestKey(r *http.Request) (key string, ok bool, err error) {
	v := r.Header.Get(KeyHeader)
	name := KeyHeader
	if v == "" {
		v, name = r.Header.Get(AgentonceKeyHeader), AgentonceKeyHeader
	}
	if v == "" {
		return "", false, nil
	}
	if len(v) > MaxKeyLength+2 {
		return "", true, fmt.Errorf("%s is %d bytes, more than the %d allowed", name, len(v), MaxKeyLength)
	}
	if v[0] == '"' {
		if v, err = unquoteSF(v); err != nil {
			return "", true, fmt.Errorf("%s: %w", name, err)
		}
	}
	if v == "" || len(v) > MaxKeyLength {
		return "", true, fmt.Errorf("%s must be 1 to %d characters, got %d", name, MaxKeyLength, len(v))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", true, fmt.Errorf("%s has a byte 0x%02x at %d: only printable ASCII is allowed", name, v[i], i)
		}
	}
	return v, true, nil
}

// unquoteSF decodes an RFC 8941 sf-string.
func unquoteSF(v string) (string, error) {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", errors.New("a quoted key must end with a double quote")
	}
	in := v[1 : len(v)-1]
	if !strings.ContainsAny(in, `\"`) {
		return in, nil
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\\' && i+1 < len(in) && (in[i+1] == '\\' || in[i+1] == '"'):
			i++
			b.WriteByte(in[i])
		case c == '\\' || c == '"':
			return "", fmt.Errorf("a quoted key has a bare %q at %d", c, i+1)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// safeMethod reports whether method has no effect to protect (RFC 9110
// §9.2.1): such requests pass through, as Stripe ignores keys on GET.
func safeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// route returns the request's route: its ServeMux pattern without a
// leading method, or, outside a ServeMux, its path.
func route(r *http.Request) string {
	p := r.Pattern
	if p == "" {
		return r.URL.Path
	}
	if i := strings.IndexByte(p, ' '); i >= 0 && !strings.ContainsRune(p[:i], '/') {
		p = strings.TrimLeft(p[i+1:], " \t")
	}
	return p
}

// errBodyTooLarge is readBody's answer to a body over its limit.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads the whole request body, up to max bytes.
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > max {
		return nil, errBodyTooLarge
	}
	n := r.ContentLength
	if n < 0 || n > max {
		n = 512
	}
	buf := make([]byte, 0, n+1)
	lr := io.LimitReader(r.Body, max+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		k, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
	}
	if int64(len(buf)) > max {
		return nil, errBodyTooLarge
	}
	return buf, nil
}

// bodyKind is how a body is canonicalized for its fingerprint.
type bodyKind byte

const (
	kindBytes bodyKind = 'b'
	kindJSON  bodyKind = 'j'
	kindForm  bodyKind = 'f'
)

// kindOf picks the canonicalization by Content-Type.
func kindOf(contentType string) bodyKind {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON
	case mt == "application/x-www-form-urlencoded":
		return kindForm
	}
	return kindBytes
}

// canonicalBody returns the body in the form its fingerprint is taken of,
// with the route's volatile fields dropped, and whether it is JSON (then
// kept as the record's Input). A JSON or form body that does not parse is
// fingerprinted by its bytes: rejecting it is the handler's business.
func (m *Middleware) canonicalBody(r *http.Request, body []byte) (bodyKind, []byte) {
	kind := kindOf(r.Header.Get("Content-Type"))
	switch kind {
	case kindJSON:
		c, err := keyderive.Canonicalize(body, &keyderive.Options{MaxBytes: len(body) + 1})
		if err != nil {
			return kindBytes, body
		}
		if n := m.normalizers[r.Pattern]; n != nil {
			if c, err = n.Normalize(c); err != nil {
				return kindBytes, body
			}
		}
		return kindJSON, c
	case kindForm:
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return kindBytes, body
		}
		for _, f := range m.o.Volatile[r.Pattern] {
			v.Del(f)
		}
		return kindForm, []byte(v.Encode()) // Encode sorts by name
	}
	return kindBytes, body
}

// fingerprint is the SHA-256 of what makes two requests with one key the
// same request: the path and query (the route pattern and method are in
// the key already) and the canonical body, each length-prefixed.
func fingerprint(r *http.Request, kind bodyKind, canonical []byte) keyderive.Fingerprint {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	field("agentonce/idempotency/request/v1")
	field(r.URL.EscapedPath())
	field(r.URL.RawQuery)
	h.Write([]byte{byte(kind)})
	binary.BigEndian.PutUint64(n[:], uint64(len(canonical)))
	h.Write(n[:])
	h.Write(canonical)
	var fp keyderive.Fingerprint
	h.Sum(fp[:0])
	return fp
}

// stepKey is the scope of a key within its tenant (keyderive.ExplicitKey
// adds the tenant and the journal's secret namespace): the method, the
// route and the client's key. No newline can occur in a method, a route
// pattern or a header value, so the join is unambiguous.
func stepKey(tool, key string) string {
	return "agentonce/idempotency/v1\n" + tool + "\n" + key
}
