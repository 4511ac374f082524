package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// streamedFingerprint is the fingerprint as it was first written (fields
// streamed into a hash.Hash one by one): the reference that the one-buffer
// fingerprintInput must match byte for byte, or every stored record's
// fingerprint would stop matching its retries.
func streamedFingerprint(m *Middleware, r *http.Request, body []byte) keyderive.Fingerprint {
	kind, canonical := kindOf(r.Header.Get("Content-Type")), body
	switch kind {
	case kindJSON:
		c, err := keyderive.Canonicalize(body, &keyderive.Options{MaxBytes: len(body) + 1})
		if err == nil {
			if n := m.normalizers[r.Pattern]; n != nil {
				c, err = n.Normalize(c)
			}
		}
		if err != nil {
			kind = kindBytes
		} else {
			canonical = c
		}
	case kindForm:
		if v, err := url.ParseQuery(string(body)); err != nil {
			kind = kindBytes
		} else {
			for _, f := range m.o.Volatile[r.Pattern] {
				v.Del(f)
			}
			canonical = []byte(v.Encode())
		}
	}
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

// The fingerprint and the journal key are what they were before the
// replay path was made cheaper: records written by earlier versions keep
// answering their retries.
func TestFingerprintUnchanged(t *testing.T) {
	m, err := New(openBoltForTest(t), &Options{Volatile: map[string][]string{
		"POST /v1/charges": {"metadata.trace", "nonce"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"z":1,"a":"` + strings.Repeat("x", 3000) + `"}`
	cases := []struct{ target, ct, pattern, body string }{
		{"/v1/charges", "application/json", "", `{"b":2,"a":1}`},
		{"/v1/charges", "application/json", "POST /v1/charges", `{"amount":1,"metadata":{"trace":"t1","x":1}}`},
		{"/v1/charges", "application/json", "POST /v1/charges", `{"amount":1,"metadata":[1]}`},
		{"/v1/charges?b=2&a=1", "application/json; charset=utf-8", "", big},
		{"/v1/charges", "application/problem+json", "", `[1e2, 0.50, "\u00e9"]`},
		{"/v1/charges", "application/json", "", `{"a":1,"a":2}`}, // not canonicalizable: by its bytes
		{"/v1/charges", "application/json", "", `{`},
		{"/v1/charges", "application/json", "", ``},
		{"/v1/ch%20arges/%2F", "application/x-www-form-urlencoded", "POST /v1/charges", "nonce=1&b=2&a=1&a=0"},
		{"/v1/charges", "application/x-www-form-urlencoded", "", "%zz"},
		{"/v1/charges", "text/plain", "", "hello\x00\xff"},
		{"/", "", "", ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, tc.target, strings.NewReader(tc.body))
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		r.Pattern = tc.pattern
		want := streamedFingerprint(m, r, []byte(tc.body))
		for _, prefill := range []int{0, 7, 2000} { // a pooled buffer's old contents must not matter
			buf := bytes.Repeat([]byte{0xaa}, prefill)[:0]
			input, at, _ := m.fingerprintInput(buf, r, []byte(tc.body))
			if got := fingerprint(input); got != want {
				t.Errorf("fingerprint(%s %s %q) = %x; want %x", tc.ct, tc.target, tc.body, got, want)
			}
			if at > len(input) {
				t.Errorf("fingerprintInput(%q): canonical body at %d of %d", tc.body, at, len(input))
			}
		}
	}
}

func TestStepKeyUnchanged(t *testing.T) {
	ns := uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	for _, tc := range []struct{ method, route, key string }{
		{"POST", "/v1/charges", "k1"}, {"PUT", "/v1/orders/{id}", "x\"y"}, {"DELETE", "/", ""},
	} {
		step, tool := stepKey(tc.method, tc.route, tc.key)
		if want := tc.method + " " + tc.route; tool != want {
			t.Errorf("stepKey(%q, %q, %q) tool = %q; want %q", tc.method, tc.route, tc.key, tool, want)
		}
		old := "agentonce/idempotency/v1\n" + tc.method + " " + tc.route + "\n" + tc.key
		if step != old {
			t.Errorf("stepKey(%q, %q, %q) = %q; want %q", tc.method, tc.route, tc.key, step, old)
		}
		if got, want := keyderive.ExplicitKey(ns, "t", step), keyderive.ExplicitKey(ns, "t", old); got != want {
			t.Errorf("key of %q = %s; want %s", step, got, want)
		}
	}
}

func openBoltForTest(t *testing.T) journal.Store {
	store, err := journal.Open(t.Context(), filepath.Join(t.TempDir(), "server.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
