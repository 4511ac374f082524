package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// capture buffers a protected handler's response, to record it first.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
	max    int
	err    error // set when the body outgrew max
}

func newCapture(max int) *capture { return &capture{header: make(http.Header), max: max} }

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 && status >= 200 { // 1xx are informational: not the answer
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.err != nil {
		return 0, c.err
	}
	if c.body.Len()+len(p) > c.max {
		c.err = fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, c.max)
		return 0, c.err
	}
	return c.body.Write(p)
}

// response is a stored response: what a replay sends.
type response struct {
	// output is the record Output encode made of it, once recorded.
	output []byte
	Status int
	Header http.Header
	Body   []byte
	// Sum is the SHA-256 of Body; Blob, when set, says where Body is kept
	// (Body is then nil in the record).
	Sum  [sha256.Size]byte
	Blob string
}

// keptHeaders are the response headers a replay needs.
var keptHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language",
	"Content-Location", "Location", "Etag", "Last-Modified", "Cache-Control", "Vary"}

// The stored form of a response, a record's Output, reads like an HTTP/1
// response message, legible and quick to parse:
//
//	agentonce-http/1 201 sha256=<hex> [blob=<ref>] [body=hash-only]
//	Content-Type: application/json
//	Location: /v1/charges/ch_1
//
//	<the body, byte for byte>
//
// A header value cannot hold a newline, so lines split it unambiguously.
const envelopeMagic = "agentonce-http/1 "

// encode returns the record Output for resp, with Body when inline.
func (resp *response) encode(inline bool) []byte {
	n := len(envelopeMagic) + 96 + len(resp.Blob)
	for k, vs := range resp.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 3
		}
	}
	if inline {
		n += len(resp.Body)
	}
	out := make([]byte, 0, n)
	out = append(out, envelopeMagic...)
	out = strconv.AppendInt(out, int64(resp.Status), 10)
	out = append(out, " sha256="...)
	out = hex.AppendEncode(out, resp.Sum[:])
	if resp.Blob != "" {
		out = append(append(out, " blob="...), resp.Blob...)
	}
	if !inline {
		out = append(out, " body=hash-only"...)
	}
	out = append(out, '\n')
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			out = append(append(append(append(out, k...), ": "...), v...), '\n')
		}
	}
	out = append(out, '\n')
	if inline {
		out = append(out, resp.Body...)
	}
	return out
}

// errNotEnvelope says an Output was not written by encode.
var errNotEnvelope = errors.New("not a stored response")

// envelope is an Output that encode wrote, parsed in place.
type envelope struct {
	status int
	sum    [sha256.Size]byte
	blob   []byte
	inline bool   // the body is kept in the Output
	header []byte // the header lines, each ending in '\n'
	nlines int    // how many there are
	sorted bool   // their names are in order, as encode writes them
	body   []byte // nil unless inline
}

// parseEnvelope reads an Output encode wrote into e, checking every line.
func parseEnvelope(out []byte, e *envelope) error {
	rest, ok := bytes.CutPrefix(out, []byte(envelopeMagic))
	if !ok {
		return errNotEnvelope
	}
	line, rest, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return badEnvelope("no status line")
	}
	status, line, _ := bytes.Cut(line, []byte{' '})
	code, ok := parseStatus(status)
	if !ok {
		return badEnvelope(fmt.Sprintf("bad status %q", status))
	}
	*e = envelope{status: code, inline: true, sorted: true}
	sum := false
	for len(line) > 0 {
		var f []byte
		f, line, _ = bytes.Cut(line, []byte{' '})
		k, v, _ := bytes.Cut(f, []byte{'='})
		switch string(k) {
		case "sha256":
			if len(v) != 2*sha256.Size {
				return badEnvelope(fmt.Sprintf("bad sha256 %q", v))
			}
			if _, err := hex.Decode(e.sum[:], v); err != nil {
				return badEnvelope(fmt.Sprintf("bad sha256 %q", v))
			}
			sum = true
		case "blob":
			e.blob = v
		case "body":
			e.inline = false
		default:
			return badEnvelope(fmt.Sprintf("unknown field %q", f))
		}
	}
	if !sum {
		return badEnvelope("no sha256")
	}
	headers := rest
	var prev []byte // the name on the line before
	for {
		line, rest, ok = bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return badEnvelope("headers not terminated")
		}
		if len(line) == 0 {
			break
		}
		k, _, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			return badEnvelope(fmt.Sprintf("bad header line %q", line))
		}
		if bytes.Compare(k, prev) < 0 {
			e.sorted = false
		}
		prev = k
		e.nlines++
	}
	e.header = headers[:len(headers)-len(rest)-1]
	switch {
	case e.inline: // the record's checksum covers it; a blob is checked when fetched
		e.body = rest
	case len(rest) > 0:
		return badEnvelope("a body after body=hash-only")
	}
	return nil
}

func badEnvelope(what string) error { return fmt.Errorf("stored response: %s", what) }

// parseStatus reads a three-digit status code, 100 to 999.
func parseStatus(b []byte) (int, bool) {
	if len(b) != 3 || b[0] < '1' || b[0] > '9' || b[1] < '0' || b[1] > '9' || b[2] < '0' || b[2] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*100 + int(b[1]-'0')*10 + int(b[2]-'0'), true
}

// writeHeader sets e's headers on h, and replayed and Content-Length.
func (e *envelope) writeHeader(h http.Header, replayed string, length int) {
	var stack [512]byte
	b := append(stack[:0], e.header...)
	if replayed != "" {
		b = strconv.AppendInt(b, int64(length), 10)
	}
	s := string(b)
	extra := 0
	if replayed != "" {
		extra = 2
	}
	vals := make([]string, e.nlines+extra)
	n, at := 0, 0 // values used; where the next header line begins
	if e.sorted { // a name's values are on consecutive lines
		var name string
		first := 0 // the first value of name in vals
		for at < len(e.header) {
			end := at + strings.IndexByte(s[at:len(e.header)], '\n')
			k, v, _ := strings.Cut(s[at:end], ": ")
			if k != name {
				if n > first {
					h[name] = vals[first:n:n]
				}
				name, first = k, n
			}
			vals[n] = v
			n++
			at = end + 1
		}
		if n > first {
			h[name] = vals[first:n:n]
		}
	} else { // not encode's: gather each name's values first
		g := http.Header{}
		for at < len(e.header) {
			end := at + strings.IndexByte(s[at:len(e.header)], '\n')
			k, v, _ := strings.Cut(s[at:end], ": ")
			g[k] = append(g[k], v)
			at = end + 1
		}
		for k, v := range g {
			h[k] = v
		}
	}
	if replayed != "" {
		vals[n], vals[n+1] = "true", s[len(e.header):]
		h[replayed] = vals[n : n+1 : n+1]
		h["Content-Length"] = vals[n+1 : n+2 : n+2]
	}
}

// write sends resp to w, marked as a replay when replayed is not empty.
func (resp *response) write(w http.ResponseWriter, replayedHeader string) {
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	if replayedHeader != "" {
		h.Set(replayedHeader, "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// write sends e's response with body, marked by the header replayed.
func (e *envelope) write(w http.ResponseWriter, replayed string, body []byte) {
	e.writeHeader(w.Header(), replayed, len(body))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

// ResolvedResponse returns the Output of a journal.Resolution that makes
// the middleware answer every retry with status, header and body, or
// names what is invalid.
func ResolvedResponse(status int, header http.Header, body []byte) ([]byte, error) {
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("status %d is not a final HTTP status (200–599)", status)
	}
	for k, vs := range header {
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r > '~' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) {
			return nil, fmt.Errorf("header name %q is not an HTTP token", k)
		}
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return nil, fmt.Errorf("header %s: value %q holds a control character", k, v)
			}
		}
	}
	return (&response{Status: status, Header: header, Body: body, Sum: sha256.Sum256(body)}).encode(true), nil
}
