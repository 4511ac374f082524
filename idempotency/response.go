package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// envelope is the JSON form of a response in a journal record's Output.
// The body is spliced in after the other fields: as the JSON value itself
// when it is one (readable in agentctl show), else base64. encoding/json
// would compact a RawMessage, so the value is written by hand and its
// bytes are checked against Sum when read back.
type envelope struct {
	V      int                 `json:"v"`
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	SHA256 string              `json:"sha256"`
	Blob   string              `json:"blob,omitempty"`
	Lead   string              `json:"lead,omitempty"`
	Trail  string              `json:"trail,omitempty"`
	Body   []byte              `json:"body,omitempty"`
	JSON   json.RawMessage     `json:"json,omitempty"`
}

// encode returns the record Output for resp. inline says whether Body is
// kept in it (else only Sum and Blob).
func (resp *response) encode(inline bool) []byte {
	e := envelope{V: 1, Status: resp.Status, Header: resp.Header, SHA256: hex.EncodeToString(resp.Sum[:]), Blob: resp.Blob}
	var value []byte
	if inline && len(resp.Body) > 0 {
		lead, v, trail := splitSpace(resp.Body)
		if len(v) > 0 && json.Valid(v) {
			e.Lead, e.Trail, value = string(lead), string(trail), v
		} else {
			e.Body = resp.Body
		}
	}
	out, _ := json.Marshal(&e) // maps of strings, strings, bytes: cannot fail
	if value == nil {
		return out
	}
	out = append(out[:len(out)-1], `,"json":`...)
	out = append(out, value...)
	return append(out, '}')
}

// errNotEnvelope says an Output was not written by encode (an operator's
// resolution, say).
var errNotEnvelope = errors.New("not a stored response")

// decodeResponse reads an Output written by encode. The body is nil when
// only its hash was kept.
func decodeResponse(out []byte) (*response, error) {
	var e envelope
	if err := json.Unmarshal(out, &e); err != nil || e.V != 1 || e.Status < 100 || e.Status > 999 {
		return nil, errNotEnvelope
	}
	resp := &response{Status: e.Status, Header: e.Header, Blob: e.Blob}
	if n, err := hex.Decode(resp.Sum[:], []byte(e.SHA256)); err != nil || n != sha256.Size {
		return nil, fmt.Errorf("stored response: bad sha256 %q", e.SHA256)
	}
	switch {
	case e.JSON != nil:
		resp.Body = make([]byte, 0, len(e.Lead)+len(e.JSON)+len(e.Trail))
		resp.Body = append(append(append(resp.Body, e.Lead...), e.JSON...), e.Trail...)
	case e.Body != nil:
		resp.Body = e.Body
	}
	if resp.Body != nil && sha256.Sum256(resp.Body) != resp.Sum {
		return nil, fmt.Errorf("stored response: body does not match its sha256 %s", e.SHA256)
	}
	return resp, nil
}

// splitSpace splits JSON's insignificant whitespace from b's ends.
func splitSpace(b []byte) (lead, v, trail []byte) {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[:i], b[i:j], b[j:]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
