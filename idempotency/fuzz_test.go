package idempotency

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"testing"
)

// A stored response reads back byte for byte, whatever its body.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{"", `{"id":"ch_1"}`, " [1, 2]\n", "\x00\xff", `{"a":"\u00e9"}  `, "null", `"x"`, "{"} {
		f.Add(201, s)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 999 {
			return
		}
		resp := &response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
		resp.Sum = sha256.Sum256(resp.Body)
		out := resp.encode(true)
		got, err := decodeResponse(out)
		if err != nil {
			t.Fatalf("decode(encode(%q)) = %v", body, err)
		}
		if got.Status != status || !bytes.Equal(got.Body, resp.Body) && len(body) > 0 {
			t.Fatalf("round trip of %d %q = %d %q", status, body, got.Status, got.Body)
		}
		again := got
		again.Sum = sha256.Sum256(got.Body)
		if !bytes.Equal(again.encode(true), out) {
			t.Fatalf("encoding is not stable for %q", body)
		}
	})
}

// A key is accepted only if it is 1 to 255 printable ASCII characters,
// bare or as an RFC 8941 string, and parsing never panics.
func FuzzRequestKey(f *testing.F) {
	for _, s := range []string{"k1", `"k1"`, `"a\"b"`, `"a\\b"`, `"unclosed`, `"bad\q"`, "", " "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r := &http.Request{Header: http.Header{"Idempotency-Key": {v}}}
		key, ok, err := requestKey(r)
		if err != nil || !ok {
			return
		}
		if key == "" || len(key) > MaxKeyLength {
			t.Fatalf("requestKey(%q) = %q: length %d", v, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("requestKey(%q) = %q: byte %#x", v, key, key[i])
			}
		}
	})
}

// Any Output parses without panic, and whatever parses writes its
// headers without panic, each stored line becoming one header value.
func FuzzParseEnvelope(f *testing.F) {
	resp := &response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Vary": {"A", "B"}},
		Body: []byte(`{"id":"ch_1"}`)}
	resp.Sum = sha256.Sum256(resp.Body)
	f.Add(resp.encode(true))
	f.Add(resp.encode(false))
	f.Add([]byte("agentonce-http/1 200 sha256=" + hexOf(sha256.Sum256(nil)) + "\nB: 1\nA: 2\nB: 3\n\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		var e envelope
		if parseEnvelope(out, &e) != nil {
			return
		}
		h := http.Header{}
		e.writeHeader(h, "", 0)
		n := 0
		for _, v := range h {
			n += len(v)
		}
		if n != e.nlines {
			t.Fatalf("writeHeader of %q set %d values; want %d", out, n, e.nlines)
		}
	})
}
