package idempotency_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The key is the draft's RFC 8941 String Item, its parameters ignored, or
// a bare key without spaces or delimiters; anything else, an empty header
// and a header sent twice included, is a 400 naming what was wrong, and
// the handler does not run.
func TestKeyHeader(t *testing.T) {
	var l ledger
	srv := chargeServer(t, openAt(t, t.TempDir()+"/key.journal"), nil, &l, nil)
	send := func(keys ...string) (int, string, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var p struct{ Detail string }
		_ = json.Unmarshal(b, &p)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), p.Detail
	}
	for _, tc := range []struct {
		keys   []string
		status int
		detail string // in the problem's detail
	}{
		{[]string{""}, 400, "empty"},
		{[]string{`""`}, 400, "empty"},
		{[]string{"a, b"}, 400, "a list"},
		{[]string{`"a", "b"`}, 400, "a list"},
		{[]string{"a b"}, 400, "quoted"},
		{[]string{"abc;p=1"}, 400, "parameters"},
		{[]string{`"a\qb"`}, 400, "invalid escape"},
		{[]string{`"abc`}, 400, "closing quote"},
		{[]string{`"abc";P=1`}, 400, "RFC 8941 parameters"},
		{[]string{`"abc";p=`}, 400, "RFC 8941 parameters"},
		{[]string{"k1", "k2"}, 400, "2 lines"},
		{[]string{`"` + strings.Repeat("k", 256) + `"`}, 400, "more than the 255"},
		{[]string{`"abc";p=1;q;r="x"`}, 201, ""},
		{[]string{`"abc"`}, 201, ""}, // the same key: replayed
		{[]string{"abc"}, 201, ""},
		{[]string{`"a b"`}, 201, ""},
		{[]string{`"a \"b\""`}, 201, ""},
	} {
		st, _, detail := send(tc.keys...)
		if st != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("Idempotency-Key %q = %d %q; want %d naming %q", tc.keys, st, detail, tc.status, tc.detail)
		}
	}
	if st, replayed, _ := send(`"abc";q=?1`); st != 201 || replayed != "true" {
		t.Errorf(`"abc";q=?1 after "abc" = %d replayed %q; want the replay`, st, replayed)
	}
	if n := l.count(); n != 3 { // abc, a b, a "b"
		t.Errorf("handler runs = %d; want 3", n)
	}
}
