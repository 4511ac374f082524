package idempotency

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"strings"
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

// A key is accepted only as 1 to 255 printable ASCII characters; an
// accepted key, quoted as an RFC 8941 String, with or without parameters,
// reads back as itself, and quoting is stable; a bare key reads as itself.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"k1", `"k1"`, `"a\"b"`, `"a\\b"`, `"unclosed`, `"bad\q"`, "", " ", `"a b"`, "a, b",
		`"abc";p=1`, `"k";a;b=?0;c=-1.5;d=:aGk=:;e=tok/x;f="s"`, `"k";A=1`, `"k" , "j"`, "1733582400_AbCdEf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := parseKey(v)
		if err != nil {
			return
		}
		if key == "" || len(key) > MaxKeyLength {
			t.Fatalf("parseKey(%q) = %q: length %d", v, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("parseKey(%q) = %q: byte %#x", v, key, key[i])
			}
		}
		q := quoteKey(key)
		for _, in := range []string{q, q + `;a;b=1;c="x\""`, " " + q + " "} {
			if got, err := parseKey(in); err != nil || got != key {
				t.Fatalf("parseKey(%q) = %q, %v; want %q (parsed from %q)", in, got, err, key, v)
			}
		}
		if bare := strings.Trim(v, " \t"); bare[0] != '"' && bare != key {
			t.Fatalf("parseKey(%q) = %q; a bare key reads as itself", v, key)
		}
	})
}

// quoteKey is key as an RFC 8941 String.
func quoteKey(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
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

// parseKey takes the draft's String Item with any RFC 8941 parameters, and
// a bare key; nothing else.
func TestParseKey(t *testing.T) {
	for in, want := range map[string]string{
		`"k"`: "k", `"k";a;b=?0;c=-1.5;d=:aGk=:;e=tok/x:y;f="s\"t";g=*h;i=-12`: "k", `"k"; a=1`: "k", ` "a\\b\"c" `: `a\b"c`,
		`"\"k"`: `"k`, "1733582400_AbCdEf": "1733582400_AbCdEf", "ch:1/a=b+c": "ch:1/a=b+c",
		`"k";a=1.2345`: "", `"k";a=1234567890123456`: "", `"k";a=1234567890123.5`: "", `"k" ;a`: "", `"k";a=?2`: "",
		`"k";a=:a b:`: "", `"k";_a`: "", `"k";a="x`: "", `"k"x`: "", "k\x7f": "", `"é"`: "", "a\tb": "",
	} {
		got, err := parseKey(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("parseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// decodeResponse reads an Output written by encode. The body is nil when
// it was not kept inline.
func decodeResponse(out []byte) (*response, error) {
	var e envelope
	if err := parseEnvelope(out, &e); err != nil {
		return nil, err
	}
	resp := &response{Status: e.status, Header: http.Header{}, Sum: e.sum, Blob: string(e.blob), Body: e.body}
	e.writeHeader(resp.Header, "", 0)
	return resp, nil
}
