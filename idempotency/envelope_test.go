package idempotency

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// A replay writes the stored headers, multi-valued ones included, then
// the replay mark and the length, replacing what the writer held for
// those names; an envelope whose header names are out of order (made by
// hand, not by encode) loses no value.
func TestEnvelopeWrite(t *testing.T) {
	resp := &response{Status: 201, Body: []byte(`{"id":"ch_1"}`), Header: http.Header{
		"Content-Type": {"application/json"}, "Vary": {"Accept", "Origin"}, "Location": {"/v1/charges/ch_1"}}}
	resp.Sum = sha256.Sum256(resp.Body)
	unsorted := "agentonce-http/1 200 sha256=" + hexOf(sha256.Sum256([]byte("ok"))) +
		"\nVary: A\nContent-Type: text/plain\nVary: B\n\nok"
	for _, tc := range []struct {
		out    []byte
		status int
		want   http.Header
		body   string
	}{
		{resp.encode(true), 201, http.Header{"Content-Type": {"application/json"}, "Vary": {"Accept", "Origin"},
			"Location": {"/v1/charges/ch_1"}, "Idempotent-Replayed": {"true"}, "Content-Length": {"13"},
			"X-Other": {"kept"}}, `{"id":"ch_1"}`},
		{[]byte(unsorted), 200, http.Header{"Content-Type": {"text/plain"}, "Vary": {"A", "B"},
			"Idempotent-Replayed": {"true"}, "Content-Length": {"2"}, "X-Other": {"kept"}}, "ok"},
	} {
		var e envelope
		if err := parseEnvelope(tc.out, &e); err != nil {
			t.Fatalf("parseEnvelope(%q) = %v", tc.out, err)
		}
		w := httptest.NewRecorder()
		w.Header()["Vary"] = []string{"Cookie"}
		w.Header()["Content-Length"] = []string{"999"}
		w.Header()["X-Other"] = []string{"kept"}
		e.write(w, "Idempotent-Replayed", e.body)
		if w.Code != tc.status || w.Body.String() != tc.body || !reflect.DeepEqual(w.Header(), tc.want) {
			t.Errorf("write(%q) = %d %v %q; want %d %v %q", tc.out, w.Code, w.Header(), w.Body, tc.status, tc.want, tc.body)
		}
	}
}

// Malformed envelopes are refused, never half-read.
func TestEnvelopeRefused(t *testing.T) {
	sum := hexOf(sha256.Sum256(nil))
	for _, out := range []string{
		"agentonce-http/1 200 sha256=" + sum,               // no newline
		"agentonce-http/1 20 sha256=" + sum + "\n\n",       // status
		"agentonce-http/1 2000 sha256=" + sum + "\n\n",     // status
		"agentonce-http/1 200\n\n",                         // no sum
		"agentonce-http/1 200 sha256=zz\n\n",               // sum
		"agentonce-http/1 200 sha256=" + sum + " x=1\n\n",  // field
		"agentonce-http/1 200 sha256=" + sum + "\nA-B\n\n", // header line
		"agentonce-http/1 200 sha256=" + sum + "\nA: b\n",  // headers not ended
		"agentonce-http/1 200 sha256=" + sum + " body=hash-only\n\nbody",
	} {
		var e envelope
		if err := parseEnvelope([]byte(out), &e); err == nil || err == errNotEnvelope {
			t.Errorf("parseEnvelope(%q) = %v; want a stored-response error", out, err)
		}
	}
	var e envelope
	if err := parseEnvelope([]byte(`{"ok":true}`), &e); err != errNotEnvelope {
		t.Errorf("parseEnvelope of an operator's output = %v; want errNotEnvelope", err)
	}
}

func hexOf(b [32]byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 64)
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// A Replay's headers, written as its doc says (a name's first value set,
// the others added) on a writer that holds headers already, give the
// header that the net/http path writes, less Content-Length: sorted or
// not, a stored Content-Length or replay mark left out; and the
// iteration stops when told to.
func TestReplayHeader(t *testing.T) {
	resp := &response{Status: 201, Body: []byte(`{"id":"ch_1"}`), Header: http.Header{
		"Content-Type": {"application/json"}, "Vary": {"Accept", "Origin"}, "Location": {"/v1/charges/ch_1"},
		"Content-Length": {"13"}, "Idempotent-Replayed": {"false"}}}
	resp.Sum = sha256.Sum256(resp.Body)
	unsorted := "agentonce-http/1 200 sha256=" + hexOf(sha256.Sum256([]byte("ok"))) +
		"\nVary: A\nContent-Type: text/plain\nX-B: 1\nVary: B\nX-B: 2\nVary: C\n\nok"
	for _, out := range [][]byte{resp.encode(true), []byte(unsorted)} {
		var e envelope
		if err := parseEnvelope(out, &e); err != nil {
			t.Fatalf("parseEnvelope(%q) = %v", out, err)
		}
		held := func() http.Header { return http.Header{"Vary": {"Cookie"}, "X-Other": {"kept"}} }
		w := httptest.NewRecorder()
		for k, v := range held() {
			w.Header()[k] = v
		}
		e.write(w, "Idempotent-Replayed", e.body)
		want := w.Header()
		delete(want, "Content-Length")

		got := held()
		r := Replay{Status: e.status, Body: e.body, header: e.header, sorted: e.sorted, replayed: []byte("Idempotent-Replayed")}
		var prev string
		for k, v := range r.Header() {
			if name := string(k); name != prev {
				got[name], prev = nil, name
			}
			got[string(k)] = append(got[string(k)], string(v))
		}
		if !reflect.DeepEqual(got, want) || r.Status != w.Code || string(r.Body) != w.Body.String() {
			t.Errorf("Replay of %q: %d %v %q; want %d %v %q", out, r.Status, got, r.Body, w.Code, want, w.Body)
		}
		for range r.Header() {
			break // an iterator that yields again panics
		}
	}
}

// Yielding a replay's headers allocates nothing.
func TestReplayHeaderAllocs(t *testing.T) {
	resp := &response{Status: 200, Body: []byte("ok"), Header: http.Header{"Content-Type": {"text/plain"}, "Vary": {"A", "B"}}}
	resp.Sum = sha256.Sum256(resp.Body)
	var e envelope
	if err := parseEnvelope(resp.encode(true), &e); err != nil {
		t.Fatal(err)
	}
	r := Replay{Status: e.status, Body: e.body, header: e.header, sorted: e.sorted, replayed: []byte("Idempotent-Replayed")}
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		for k, v := range r.Header() {
			n += len(k) + len(v)
		}
	}); a != 0 {
		t.Errorf("Replay.Header allocates %v times; want 0", a)
	}
}

// ResolvedResponse builds the envelope a replay parses back to the same
// status, headers and body; what a replay could not send (a newline would
// forge a header line) is refused, named.
func TestResolvedResponse(t *testing.T) {
	body := []byte("{\"id\":\"ch_1\"}\n")
	hdr := http.Header{"Location": {"/v1/charges/ch_1"}, "Content-Type": {"application/json"}, "Vary": {"A", "B"}}
	out, err := ResolvedResponse(201, hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	var e envelope
	if err := parseEnvelope(out, &e); err != nil || e.status != 201 || string(e.body) != string(body) || e.sum != sha256.Sum256(body) {
		t.Fatalf("parsed %q: %v, status %d, body %q", out, err, e.status, e.body)
	}
	got := http.Header{}
	e.writeHeader(got, "", 0)
	if !reflect.DeepEqual(got, hdr) {
		t.Errorf("headers = %v; want %v", got, hdr)
	}
	for _, tc := range []struct {
		status int
		hdr    http.Header
		want   string
	}{
		{199, nil, "status 199 is not a final HTTP status"},
		{600, nil, "status 600"},
		{200, http.Header{"Bad Name": {"x"}}, `header name "Bad Name" is not an HTTP token`},
		{200, http.Header{"X-A": {"a\nInjected: 1"}}, "header X-A: value"},
	} {
		if _, err := ResolvedResponse(tc.status, tc.hdr, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ResolvedResponse(%d, %v) = %v; want an error containing %q", tc.status, tc.hdr, err, tc.want)
		}
	}
}
