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
)

// capture is the ResponseWriter a protected handler writes to: it buffers
// the response so that it is recorded before the client sees it. It does
// not implement http.Flusher or http.Hijacker: a streamed response cannot
// be replayed.
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

// keptHeaders are the response headers a replay needs to mean what the
// first answer meant; the rest (Date, Set-Cookie, …) are per-exchange.
var keptHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language",
	"Content-Location", "Location", "Etag", "Last-Modified", "Cache-Control", "Vary"}

// The stored form of a response, a record's Output, reads like an HTTP/1
// response message, so that agentctl show is legible and a replay parses
// it in well under a microsecond (encoding/json took several, more than a
// journal Get):
//
//	agentonce-http/1 201 sha256=<hex> [blob=<ref>] [body=hash-only]
//	Content-Type: application/json
//	Location: /v1/charges/ch_1
//
//	<the body, byte for byte>
//
// A header value cannot hold a newline (net/http refuses one), so lines
// split it unambiguously; the body follows the blank line, covered by the
// journal record's checksum (a blob by its SHA-256, checked when fetched).
const envelopeMagic = "agentonce-http/1 "

// encode returns the record Output for resp. inline says whether Body is
// kept in it (else only Sum, and Blob when set).
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

// errNotEnvelope says an Output was not written by encode (an operator's
// resolution, say).
var errNotEnvelope = errors.New("not a stored response")

// decodeResponse reads an Output written by encode. The body is nil when
// it was not kept inline.
func decodeResponse(out []byte) (*response, error) {
	rest, ok := bytes.CutPrefix(out, []byte(envelopeMagic))
	if !ok {
		return nil, errNotEnvelope
	}
	bad := func(what string) error { return fmt.Errorf("stored response: %s", what) }
	line, rest, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return nil, bad("no status line")
	}
	status, line, _ := bytes.Cut(line, []byte{' '})
	code, err := strconv.Atoi(string(status))
	if err != nil || code < 100 || code > 999 {
		return nil, bad(fmt.Sprintf("bad status %q", status))
	}
	resp := &response{Status: code, Header: http.Header{}}
	inline, sum := true, false
	for len(line) > 0 {
		var f []byte
		f, line, _ = bytes.Cut(line, []byte{' '})
		k, v, _ := bytes.Cut(f, []byte{'='})
		switch string(k) {
		case "sha256":
			if len(v) != 2*sha256.Size {
				return nil, bad(fmt.Sprintf("bad sha256 %q", v))
			}
			if _, err := hex.Decode(resp.Sum[:], v); err != nil {
				return nil, bad(fmt.Sprintf("bad sha256 %q", v))
			}
			sum = true
		case "blob":
			resp.Blob = string(v)
		case "body":
			inline = false
		default:
			return nil, bad(fmt.Sprintf("unknown field %q", f))
		}
	}
	if !sum {
		return nil, bad("no sha256")
	}
	for {
		line, rest, ok = bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, bad("headers not terminated")
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			return nil, bad(fmt.Sprintf("bad header line %q", line))
		}
		resp.Header[string(k)] = append(resp.Header[string(k)], string(v))
	}
	switch {
	case inline:
		// The journal's record checksum already covers an inline body; a
		// blob's is checked against Sum when it is fetched.
		resp.Body = rest
	case len(rest) > 0:
		return nil, bad("a body after body=hash-only")
	}
	return resp, nil
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
