package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// parse reads r's key, body and tenant into a call and its BeginRequest,
// less the fingerprint; nil when it answered r itself.
func (m *Middleware) parse(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, read bool) (*call, []byte) {
	if safeMethod(r.Method) && m.o.Key == nil {
		next.ServeHTTP(w, r)
		return nil, nil
	}
	c := &call{}
	if r.Pattern != "" {
		m.routed.Store(true)
	} else {
		m.unrouted.Store(true)
	}
	if m.o.Approvals != nil && r.Pattern == "" { // fail closed: no route, no telling it needs none
		writeProblem(w, http.StatusInternalServerError, ProblemFailed, problem{Detail: "not run: Options.Approvals names route patterns, " +
			"and this request has none (wrap the handlers registered on a ServeMux, not the mux)"}, 0)
		return nil, nil
	}
	var err error
	if m.o.Key == nil {
		var ok bool
		c.key, ok, err = requestKey(r)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, ProblemKeyInvalid, problem{Detail: err.Error()}, 0)
			return nil, nil
		}
		if !ok {
			if m.o.Approvals[r.Pattern] > 0 || m.o.Require != nil && m.o.Require(r) {
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
		// Under InTx a record lost in a crash lost the handler's writes too.
		Durable:     m.inTx == nil,
		Guard:       journal.GuardOff,
		Settle:      m.settle,
		Approvals:   m.o.Approvals[r.Pattern],
		ApprovalTTL: m.o.ApprovalTTL,
	}
	return c, body
}

// requestKey returns Idempotency-Key, else X-Agentonce-Key; ok if either.
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

// headerValue is h.Get(name) for a name already in canonical form.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseKey reads a key sent as an RFC 8941 String ("k1", parameters
// ignored) or bare (k1): 1 to MaxKeyLength printable ASCII characters.
func parseKey(v string) (key string, err error) {
	v = strings.Trim(v, " \t")
	key, rest := v, ""
	if v != "" && v[0] == '"' {
		key, rest, err = parseString(v)
	} else if i := strings.IndexFunc(v, func(c rune) bool { return c <= ' ' || c > '~' || strings.ContainsRune(`",;\`, c) }); i >= 0 {
		rest, err = v[i:], fmt.Errorf("%q at %d is not allowed in a bare key: send it quoted, as the draft does (\"…\")", v[i], i)
	}
	switch {
	case strings.HasPrefix(rest, ","):
		return "", errors.New("a list: send one key")
	case strings.HasPrefix(rest, ";") && err != nil:
		return "", errors.New("parameters follow only a quoted key")
	case err != nil:
		return "", err
	case rest != "" && !params.MatchString(rest):
		return "", fmt.Errorf("%.40q after the key is not RFC 8941 parameters (;name or ;name=value)", rest)
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxKeyLength:
		return "", fmt.Errorf("the key is %d characters, more than the %d allowed", len(key), MaxKeyLength)
	}
	return key, nil
}

// params matches RFC 8941 parameters.
var params = regexp.MustCompile(`^(?:; *[a-z*][a-z0-9_.*-]*(?:=(?:"(?:[ !#-\[\]-~]|\\["\\])*"|` +
	`-?[0-9]{1,12}\.[0-9]{1,3}|-?[0-9]{1,15}|[A-Za-z*][-!#$%&'*+.^_|~0-9A-Za-z:/` + "`" + `]*|:[A-Za-z0-9+/=]*:|\?[01]))?)*$`)

// parseString reads the RFC 8941 String v begins with; rest follows it.
func parseString(v string) (s, rest string, err error) {
	var b []byte // the string decoded up to from, once it has an escape
	from := 1
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' && b == nil:
			return v[1:i], v[i+1:], nil
		case c == '"':
			return string(append(b, v[from:i]...)), v[i+1:], nil
		case c == '\\':
			if i+1 == len(v) || v[i+1] != '"' && v[i+1] != '\\' {
				return "", "", fmt.Errorf("an invalid escape at %d: only \\\" and \\\\ are", i)
			}
			b = append(append(b, v[from:i]...), v[i+1])
			i++
			from = i + 1
		case c < ' ' || c > '~':
			return "", "", fmt.Errorf("the byte %#02x at %d is not allowed in a string", c, i)
		}
	}
	return "", "", errors.New("the string has no closing quote")
}

// safeMethod reports whether method has no effect to protect (RFC 9110).
func safeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// route returns r's ServeMux pattern without its method, else its path.
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

// fingerprintInput appends to buf what a request's fingerprint hashes
// (the path, the query and the canonical body without the route's
// volatile fields, length-prefixed), and returns it with the canonical
// body's offset and kind. A body that does not parse is taken as bytes.
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

// fingerprint is the SHA-256 of fingerprintInput's bytes.
func fingerprint(input []byte) keyderive.Fingerprint {
	return keyderive.Fingerprint(sha256.Sum256(input))
}

// inputPool recycles fingerprintInput's buffers.
var inputPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledInput is the largest buffer put back in inputPool.
const maxPooledInput = 64 << 10

// stepKey is a key's scope within its tenant; tool is "METHOD route".
func stepKey(method, route, key string) (step, tool string) {
	step = stepKeyTag + method + " " + route + "\n" + key
	return step, step[len(stepKeyTag) : len(stepKeyTag)+len(method)+1+len(route)]
}

// stepKeyTag begins every step key.
const stepKeyTag = "agentonce/idempotency/v1\n"
