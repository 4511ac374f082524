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
	"sync"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// parse reads what the journal needs from r: the client's key (or the
// event id Options.Key takes), the body, the tenant, and from them the
// journal key and the BeginRequest, less its fingerprint. It returns a nil
// call when it answered r itself: a problem, or next for a request that
// is not protected (a safe method, or no key where none is required).
func (m *Middleware) parse(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, read bool) (*call, []byte) {
	if safeMethod(r.Method) && m.o.Key == nil {
		next.ServeHTTP(w, r)
		return nil, nil
	}
	c := &call{}
	var err error
	if m.o.Key == nil {
		var ok bool
		c.key, ok, err = requestKey(r)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, ProblemKeyInvalid, problem{Detail: err.Error()}, 0)
			return nil, nil
		}
		if !ok {
			if m.o.Require != nil && m.o.Require(r) {
				writeProblem(w, http.StatusBadRequest, ProblemKeyRequired,
					problem{Detail: r.Method + " " + route(r) + " requires an Idempotency-Key header"}, 0)
				return nil, nil
			}
			next.ServeHTTP(w, r)
			return nil, nil
		}
	}
	if read {
		body, err = readBody(r, m.o.MaxBodyBytes)
	} else if int64(len(body)) > m.o.MaxBodyBytes {
		err = errBodyTooLarge
	}
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			writeProblem(w, http.StatusRequestEntityTooLarge, ProblemBodyTooLarge,
				problem{Detail: fmt.Sprintf("the body exceeds %d bytes", m.o.MaxBodyBytes)}, 0)
		} else {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
		return nil, nil
	}
	c.body.Reset(body)
	r.Body = &c.body
	if m.o.Key != nil {
		if c.key, err = m.o.Key(r, body); err == nil && (c.key == "" || len(c.key) > MaxKeyLength) {
			err = fmt.Errorf("the event id must be 1 to %d bytes, got %d", MaxKeyLength, len(c.key))
		}
		if err != nil {
			status, kind := http.StatusBadRequest, ProblemKeyInvalid
			if errors.Is(err, ErrSignature) {
				status, kind = http.StatusUnauthorized, ProblemUnauthenticated
			}
			writeProblem(w, status, kind, problem{Detail: err.Error()}, 0)
			return nil, nil
		}
	}
	if m.o.Tenant != nil {
		if c.tenant, err = m.o.Tenant(r); err != nil {
			writeProblem(w, http.StatusUnauthorized, ProblemUnauthenticated, problem{Detail: err.Error()}, 0)
			return nil, nil
		}
	}
	var step string
	step, c.tool = stepKey(r.Method, route(r), c.key)
	c.jkey = keyderive.ExplicitKey(m.ns, c.tenant, step)
	c.req = journal.BeginRequest{
		Key:       c.jkey,
		Intent:    keyderive.Intent{Tenant: c.tenant, Session: c.key, Tool: c.tool},
		Effect:    journal.Keyed,
		Owner:     m.o.Owner,
		AttemptID: headerValue(r.Header, RequestIDHeader),
		LeaseTTL:  m.o.LeaseTTL,
		RecordTTL: m.o.TTL,
		// The write-ahead: a crash mid-handler must leave the record. Under
		// InTx it need not reach the disk first: the handler's writes
		// commit only with the outcome, which makes the record durable
		// too, so a record lost in a crash lost them with it, and a
		// process killed mid-handler still leaves it (the bbolt store's
		// pending log, PostgreSQL's server), to be run again.
		Durable: m.inTx == nil,
		Guard:   journal.GuardOff,
	}
	return c, body
}

// requestKey returns the request's idempotency key: Idempotency-Key, or
// X-Agentonce-Key when it is absent, read by parseKey. ok is false when
// neither is sent; a header sent empty, or on several lines, is an error.
func requestKey(r *http.Request) (key string, ok bool, err error) {
	name := KeyHeader
	vs := r.Header[name]
	if len(vs) == 0 {
		name = AgentonceKeyHeader
		if vs = r.Header[name]; len(vs) == 0 {
			return "", false, nil
		}
	}
	if len(vs) > 1 {
		return "", true, fmt.Errorf("%s is sent on %d lines: send one key", name, len(vs))
	}
	if key, err = parseKey(vs[0]); err != nil {
		return "", true, fmt.Errorf("%s: %w", name, err)
	}
	return key, true, nil
}

// headerValue is h.Get(name) for a name already in canonical form, without
// canonicalizing it again on every request.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseKey reads a key as the draft sends it, an RFC 8941 Item whose
// value is a String ("k1"), its parameters (;p=1) checked and ignored;
// or bare (k1), as Stripe's clients, Fiber's and the harness's Transport
// send it: visible ASCII without the delimiters `"`, `,`, `;` and `\`.
// The key is 1 to MaxKeyLength characters of printable ASCII.
func parseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", errors.New("the key is empty")
	}
	key, rest := v, ""
	if v[0] == '"' {
		var err error
		if key, rest, err = parseString(v); err != nil {
			return "", err
		}
		if err = skipParams(v, rest); err != nil {
			return "", err
		}
	} else if i := strings.IndexFunc(v, func(c rune) bool { return c <= ' ' || c > '~' || strings.ContainsRune(`",;\`, c) }); i >= 0 {
		switch v[i] {
		case ',':
			return "", fmt.Errorf("a list (a comma at %d): send one key", i)
		case ';':
			return "", fmt.Errorf("parameters (at %d) follow only a quoted key", i)
		}
		return "", fmt.Errorf("%q at %d is not allowed in a bare key: send it quoted, as the draft does (\"…\")", v[i], i)
	}
	switch {
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxKeyLength:
		return "", fmt.Errorf("the key is %d characters, more than the %d allowed", len(key), MaxKeyLength)
	}
	return key, nil
}

// parseString reads the RFC 8941 sf-string that v begins with, and
// returns it decoded and what follows it.
func parseString(v string) (s, rest string, err error) {
	var b []byte // only for a string with an escape
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			if b == nil {
				return v[1:i], v[i+1:], nil
			}
			return string(b), v[i+1:], nil
		case c == '\\':
			if i+1 == len(v) || v[i+1] != '"' && v[i+1] != '\\' {
				return "", "", fmt.Errorf("an invalid escape at %d: only \\\" and \\\\ are", i)
			}
			if b == nil {
				b = append(make([]byte, 0, len(v)), v[1:i]...)
			}
			i++
			b = append(b, v[i])
		case c < ' ' || c > '~':
			return "", "", fmt.Errorf("the byte %#02x at %d is not allowed in a string", c, i)
		default:
			if b != nil {
				b = append(b, c)
			}
		}
	}
	return "", "", errors.New("the string has no closing quote")
}

// skipParams checks the RFC 8941 parameters rest holds (;name or
// ;name=bare-item, each), which end the Item v.
func skipParams(v, rest string) error {
	for rest != "" {
		at := len(v) - len(rest)
		switch {
		case rest[0] == ',':
			return fmt.Errorf("a list (a comma at %d): send one key", at)
		case rest[0] != ';':
			return fmt.Errorf("%q at %d after the string: only parameters (;name=value) may follow it", rest[0], at)
		}
		rest = strings.TrimLeft(rest[1:], " ")
		n := strings.IndexFunc(rest, func(c rune) bool {
			return !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.ContainsRune("_-.*", c))
		})
		if n < 0 {
			n = len(rest)
		}
		if n == 0 || rest[0] != '*' && (rest[0] < 'a' || rest[0] > 'z') {
			return fmt.Errorf("a parameter's name at %d must begin with a-z or *", len(v)-len(rest))
		}
		if rest = rest[n:]; rest == "" || rest[0] != '=' {
			continue
		}
		var err error
		if rest, err = skipBareItem(rest[1:]); err != nil {
			return fmt.Errorf("the parameter's value at %d: %w", len(v)-len(rest), err)
		}
	}
	return nil
}

// skipBareItem returns what follows the RFC 8941 bare item v begins with:
// an Integer or Decimal, a String, a Token, a Byte Sequence or a Boolean.
func skipBareItem(v string) (string, error) {
	span := func(from int, ok func(c byte) bool) int {
		for from < len(v) && ok(v[from]) {
			from++
		}
		return from
	}
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	switch {
	case v == "":
		return "", errors.New("missing")
	case v[0] == '"':
		_, rest, err := parseString(v)
		return rest, err
	case v[0] == '?':
		if len(v) < 2 || v[1] != '0' && v[1] != '1' {
			return "", errors.New("a Boolean is ?0 or ?1")
		}
		return v[2:], nil
	case v[0] == ':':
		n := span(1, func(c byte) bool { return c == '+' || c == '/' || c == '=' || digit(c) || isAlpha(c) })
		if n == len(v) || v[n] != ':' {
			return "", errors.New("a Byte Sequence ends with ':'")
		}
		return v[n+1:], nil
	case v[0] == '*' || isAlpha(v[0]):
		return v[span(1, func(c byte) bool { return c == ':' || c == '/' || isTchar(c) }):], nil
	}
	i := 0
	if v[0] == '-' {
		i = 1
	}
	n := span(i, digit)
	if n > i && n < len(v) && v[n] == '.' {
		m := span(n+1, digit)
		if n-i > 12 || m-n-1 < 1 || m-n-1 > 3 {
			return "", errors.New("a Decimal has 1 to 12 digits, '.', and 1 to 3 digits")
		}
		return v[m:], nil
	}
	if n == i || n-i > 15 {
		return "", errors.New("not a bare item (an Integer has 1 to 15 digits)")
	}
	return v[n:], nil
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isTchar reports whether c is an RFC 9110 token character.
func isTchar(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c < 0x80 && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
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

// fingerprintInput appends to buf what a request's fingerprint is the
// SHA-256 of, and returns it with the canonical body's offset in it and its
// kind: the path and query (the route pattern and method are in the key
// already) and the body in its canonical form, with the route's volatile
// fields dropped, each length-prefixed. A JSON body's canonical form is
// also the record's Input. A JSON or form body that does not parse is
// fingerprinted by its bytes: rejecting it is the handler's business.
//
// The fields are appended to one buffer and hashed once (see fingerprint),
// the canonical form written in place after its kind and length: a request
// costs no allocation here beyond the buffer, which serve pools.
func (m *Middleware) fingerprintInput(buf []byte, r *http.Request, body []byte) (out []byte, at int, kind bodyKind) {
	buf = appendField(buf, "agentonce/idempotency/request/v1")
	buf = appendField(buf, r.URL.EscapedPath())
	buf = appendField(buf, r.URL.RawQuery)
	head := len(buf)  // the kind's byte, then the canonical body's length
	at = head + 1 + 8 // the canonical body
	buf = append(buf, make([]byte, 1+8)...)
	kind = kindOf(headerValue(r.Header, "Content-Type"))
	switch kind {
	case kindJSON:
		c, err := keyderive.AppendCanonical(buf, body, &keyderive.Options{MaxBytes: len(body) + 1})
		if err == nil {
			if n := m.normalizers[r.Pattern]; n != nil {
				var nc []byte
				if nc, err = n.Normalize(c[at:]); err == nil {
					c = append(c[:at], nc...)
				}
			}
		}
		if err == nil {
			buf = c
		} else {
			kind, buf = kindBytes, append(buf[:at], body...)
		}
	case kindForm:
		v, err := url.ParseQuery(string(body))
		if err != nil {
			kind, buf = kindBytes, append(buf, body...)
			break
		}
		for _, f := range m.o.Volatile[r.Pattern] {
			v.Del(f)
		}
		buf = append(buf, v.Encode()...) // Encode sorts by name
	default:
		buf = append(buf, body...)
	}
	buf[head] = byte(kind)
	binary.BigEndian.PutUint64(buf[head+1:at], uint64(len(buf)-at))
	return buf, at, kind
}

// appendField appends s preceded by its length, 8 bytes big-endian.
func appendField(buf []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint64(buf, uint64(len(s))), s...)
}

// fingerprint is the SHA-256 of what makes two requests with one key the
// same request: fingerprintInput's bytes.
func fingerprint(input []byte) keyderive.Fingerprint {
	return keyderive.Fingerprint(sha256.Sum256(input))
}

// inputPool recycles fingerprintInput's buffers.
var inputPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledInput is the largest buffer put back in inputPool: a rare large
// body's buffer is left to the collector rather than kept.
const maxPooledInput = 64 << 10

// stepKey is the scope of a key within its tenant (keyderive.ExplicitKey
// adds the tenant and the journal's secret namespace): the method, the
// route and the client's key. No newline can occur in a method, a route
// pattern or a header value, so the join is unambiguous. tool, the method
// and route ("POST /v1/charges"), is a substring of it: one allocation
// for both.
func stepKey(method, route, key string) (step, tool string) {
	step = stepKeyTag + method + " " + route + "\n" + key
	return step, step[len(stepKeyTag) : len(stepKeyTag)+len(method)+1+len(route)]
}

// stepKeyTag begins every step key.
const stepKeyTag = "agentonce/idempotency/v1\n"
