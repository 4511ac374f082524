package approval_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/approval"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// awaiting is an intent recorded as awaiting approval.
type awaiting struct {
	key uuid.UUID
	fp  keyderive.Fingerprint
}

// openJournal opens a bbolt journal in the test's directory.
func openJournal(t *testing.T) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "agent.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ask records a call of tool that needs need approvals, as a tool that
// requires approval does: Begin answers Held and nothing runs.
func ask(t *testing.T, s journal.Store, session, tool, input string, need int) awaiting {
	t.Helper()
	in := keyderive.Intent{Tenant: "acme", Session: session, Turn: "3", Tool: tool}
	d, err := (&keyderive.Deriver{Namespace: s.Namespace()}).Derive(in, []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Begin(context.Background(), journal.BeginRequest{Key: d.Key, Intent: in, Fingerprint: d.Fingerprint,
		Effect: journal.Unkeyed, Input: d.Canonical, Owner: "agent-1", Durable: true, Approvals: need, ApprovalTTL: time.Hour})
	if err != nil || res.Outcome != journal.Held {
		t.Fatalf("Begin(%s) = %v, %v; want Held", tool, res.Outcome, err)
	}
	return awaiting{d.Key, d.Fingerprint}
}

// serve mounts the handler under /approvals/ on a loopback server, with
// an Approver that reads the person from the X-User header (standing in
// for the application's session) and refuses a request without one.
func serve(t *testing.T, s journal.Store) *httptest.Server {
	t.Helper()
	h := approval.Handler(s, &approval.Options{Approver: func(r *http.Request) (string, error) {
		if u := r.Header.Get("X-User"); u != "" {
			return u, nil
		}
		return "", errors.New("not signed in")
	}})
	mux := http.NewServeMux()
	mux.Handle("/approvals/", http.StripPrefix("/approvals", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// post sends a decision's form as a browser on the page would, with the
// headers changed by edit.
func post(t *testing.T, srv *httptest.Server, form url.Values, edit func(http.Header)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/approvals/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("X-User", "ann")
	if edit != nil {
		edit(req.Header)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestForgeries: a decision that is not the page's own is refused and
// records nothing: another input's fingerprint, a cross-site POST, one
// that says no origin, a person the application's auth refuses, an
// oversized form, a rejection without a reason.
func TestForgeries(t *testing.T) {
	s := openJournal(t)
	refund := ask(t, s, "s-1", "refund", `{"amount":900}`, 1)
	other := ask(t, s, "s-1", "refund-all", `{"amount":90000}`, 1)
	srv := serve(t, s)
	approve := url.Values{"key": {refund.key.String()}, "fingerprint": {refund.fp.String()}, "decision": {"approve"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for n, vs := range approve {
			f[n] = vs
		}
		f.Set(k, v)
		return f
	}
	tests := []struct {
		name string
		form url.Values
		edit func(http.Header)
		code int
		want string
	}{
		{"another input's fingerprint", with("fingerprint", other.fp.String()), nil, http.StatusConflict, "an approval runs only the input it names"},
		{"a short fingerprint", with("fingerprint", refund.fp.String()[:20]), nil, http.StatusBadRequest, "64 hex digits"},
		{"cross-site", approve, func(h http.Header) { h.Set("Origin", "https://evil.example"); h.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden, "cross-site"},
		{"cross-origin, old browser", approve, func(h http.Header) { h.Set("Origin", "https://evil.example"); h.Del("Sec-Fetch-Site") }, http.StatusForbidden, "cross-site"},
		{"no origin", approve, func(h http.Header) { h.Del("Origin"); h.Del("Sec-Fetch-Site") }, http.StatusForbidden, "says no origin"},
		{"not signed in", approve, func(h http.Header) { h.Del("X-User") }, http.StatusForbidden, "not allowed to decide: not signed in"},
		{"oversized", with("reason", strings.Repeat("x", 20<<10)), nil, http.StatusRequestEntityTooLarge, "too large"},
		{"rejection without reason", with("decision", "reject"), nil, http.StatusBadRequest, "a rejection needs a reason"},
		{"rejection with a blank reason", url.Values{"key": {refund.key.String()}, "decision": {"reject"}, "reason": {" \n "}}, nil, http.StatusBadRequest, "a rejection needs a reason"},
		{"no decision", with("decision", "run"), nil, http.StatusBadRequest, `decision "run": want approve or reject`},
		{"no such intent", with("key", uuid.NewString()), nil, http.StatusNotFound, "no record"},
	}
	for _, tt := range tests {
		code, body := post(t, srv, tt.form, tt.edit)
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: POST = %d %q; want %d and %q", tt.name, code, body, tt.code, tt.want)
		}
	}
	for _, a := range []awaiting{refund, other} {
		if r, _ := s.Get(context.Background(), a.key); r.State != journal.StateAwaiting || len(r.Approval.Given) != 0 || r.Resolution != nil {
			t.Errorf("%s after the forgeries: %s, approvals %+v, resolution %+v; want awaiting with nothing recorded", r.Intent.Tool, r.State, r.Approval.Given, r.Resolution)
		}
	}
	// The page's own approval is recorded, and a second one of the same
	// intent (it needs one) is refused.
	if code, body := post(t, srv, approve, nil); code != http.StatusSeeOther {
		t.Fatalf("the page's approval = %d %q; want 303", code, body)
	}
	if code, _ := post(t, srv, with("fingerprint", refund.fp.String()), func(h http.Header) { h.Set("X-User", "bob") }); code != http.StatusConflict {
		t.Errorf("a second approval of an approved intent = %d; want 409", code)
	}
}

// TestPageEscapesInput: an input that holds markup is shown as text, and
// a person the application refuses sees nothing of the queue.
func TestPageEscapesInput(t *testing.T) {
	s := openJournal(t)
	ask(t, s, "s-1", "note", `{"text":"</pre><script>alert(1)</script>"}`, 1)
	srv := serve(t, s)
	get := func(user string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/approvals/", nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("ann")
	if code != http.StatusOK || strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("GET = %d, page:\n%s\nwant the input escaped", code, page)
	}
	if code, page := get(""); code != http.StatusForbidden || strings.Contains(page, "note") {
		t.Errorf("GET not signed in = %d %q; want 403 and no queue", code, page)
	}
}

// TestJournalFailure: when the journal fails, the page does not claim
// that nothing was recorded.
func TestJournalFailure(t *testing.T) {
	s := openJournal(t)
	refund := ask(t, s, "s-1", "refund", `{"amount":900}`, 1)
	srv := serve(t, s)
	s.Close()
	code, body := post(t, srv, url.Values{"key": {refund.key.String()}, "fingerprint": {refund.fp.String()}, "decision": {"approve"}}, nil)
	if code != http.StatusInternalServerError || !strings.Contains(body, "may or may not be recorded") || strings.Contains(body, "nothing was recorded") {
		t.Errorf("POST on a closed journal = %d %q; want 500 saying the decision may or may not be recorded", code, body)
	}
}
