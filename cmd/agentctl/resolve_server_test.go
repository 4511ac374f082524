package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// The first answer of the charge the server made and then lost: what the
// operator restores, byte for byte (the spacing and the newline included).
const chargeAnswer = "{\"id\": \"ch_1\",  \"object\":\"charge\"}\n"

// A handler that panics after charging leaves an unknown record; agentctl
// resolve --status --header --body gives it back its first answer, and the
// retry gets exactly that, replayed, without running the handler again.
// On a bbolt journal that agentonce.OpenJournal opened, and on PostgreSQL,
// the server keeps running: agentctl reaches the first through the socket
// beside it. On a bbolt journal opened bare, the server is stopped for
// agentctl (it holds the file's lock). agentctl queue lists the request
// until it is resolved; on the served journal, while every connection the
// socket allows is held idle.
func TestResolveRestoresServerAnswer(t *testing.T) {
	clock := &journal.Options{Now: func() time.Time { return testNow }}
	t.Run("bolt served", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "server.journal")
		restoreServerAnswer(t, path, func() (journal.Store, func() error) {
			s, closeJournal, err := agentonce.OpenJournal(context.Background(), path,
				&agentonce.OpenOptions{Journal: clock, Inspect: agentonce.InspectRequire})
			if err != nil {
				t.Fatal(err)
			}
			return s, closeJournal
		}, false)
	})
	t.Run("bolt stopped", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "server.journal")
		restoreServerAnswer(t, path, func() (journal.Store, func() error) {
			s, err := bolt.Open(path, &bolt.Options{Journal: *clock})
			if err != nil {
				t.Fatal(err)
			}
			return s, s.Close
		}, true)
	})
	t.Run("postgres", func(t *testing.T) {
		loc := pgJournal(t)
		restoreServerAnswer(t, loc, func() (journal.Store, func() error) {
			s, err := openAt(context.Background(), loc, clock, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			return s, s.Close
		}, false)
	})
}

func restoreServerAnswer(t *testing.T, loc string, open func() (journal.Store, func() error), restart bool) {
	var runs atomic.Int32
	handler := func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			panic("lost the card network after charging")
		}
		w.WriteHeader(http.StatusTeapot) // a second run: the duplicate charge
	}
	serve := func() (*httptest.Server, func() error) {
		s, closeJournal := open()
		m, err := idempotency.New(s, &idempotency.Options{ErrorLog: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(handler)))
		srv := httptest.NewUnstartedServer(mux)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panic, on purpose
		srv.Start()
		return srv, closeJournal
	}
	srv, closeJournal := serve()
	defer func() { srv.Close(); closeJournal() }()

	if st, _, _ := postCharge(t, srv.URL); st != 0 {
		t.Fatalf("the panicking request answered %d; want the connection dropped", st)
	}
	st, _, body := postCharge(t, srv.URL)
	var p struct {
		JournalKey string `json:"journal_key"`
	}
	if st != http.StatusInternalServerError || json.Unmarshal([]byte(body), &p) != nil || p.JournalKey == "" {
		t.Fatalf("retry before the resolve = %d %s; want 500 outcome-unknown with the journal key", st, body)
	}
	if restart {
		srv.Close()
		closeJournal()
	}

	if sock := inspect.SocketPath(loc); !restart && !isRemote(loc) {
		holdIdle(t, sock, inspect.DefaultMaxConns) // they never lock the operator out
	}
	items, qr := queueItems(t, loc)
	if qr.code != exitQueued || len(items) != 1 || items[0].Key != p.JournalKey || items[0].End != "server" ||
		!strings.Contains(items[0].Commands[0].Command, " resolve "+p.JournalKey+" --succeeded --status ") {
		t.Fatalf("queue before the resolve = %d, %+v, %q; want the request, a server's, with its resolve commands", qr.code, items, qr.stderr)
	}

	file := filepath.Join(t.TempDir(), "answer.json")
	if err := os.WriteFile(file, []byte(chargeAnswer), 0o600); err != nil {
		t.Fatal(err)
	}
	r := agentctl(t, false, "resolve", p.JournalKey, "--journal", loc, "--succeeded", "--by", "ops",
		"--status", "201", "--header", "Location: /v1/charges/ch_1", "--header", "Content-Type: application/json", "--body", "@"+file)
	if r.code != 0 || !strings.Contains(r.stdout, "answered 201, headers Content-Type, Location, 35 bytes of body") {
		t.Fatalf("resolve = %d, %q, %q", r.code, r.stdout, r.stderr)
	}

	if items, qr := queueItems(t, loc); qr.code != 0 || len(items) != 0 {
		t.Errorf("queue after the resolve = %d, %+v, %q; want nothing, exit 0", qr.code, items, qr.stderr)
	}
	if restart {
		srv, closeJournal = serve()
	}
	for range 2 {
		st, h, body := postCharge(t, srv.URL)
		if st != http.StatusCreated || body != chargeAnswer || h.Get("Location") != "/v1/charges/ch_1" ||
			h.Get("Content-Type") != "application/json" || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry after the resolve = %d %v %q; want 201, the Location, the body as given, replayed", st, h, body)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times; want 1", n)
	}
}

// holdIdle opens n connections to the agentctl socket at sock, each left
// idle after the hellos, until the test ends.
func holdIdle(t *testing.T, sock string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, `{"protocol":"agentonce-inspect","version":%d}`+"\n", inspect.Version)
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, `"namespace"`) {
			t.Fatalf("hello = %q, %v; want the server's hello", line, err)
		}
	}
}

// postCharge sends the charge with its idempotency key; a dropped
// connection is status 0.
func postCharge(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/charges", strings.NewReader(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-77")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// The server flags are checked before the journal is opened, each bad
// one named; on an agent's record they are refused.
func TestResolveServerAnswerBadUsage(t *testing.T) {
	fx := buildFixture(t)
	key := fx.keys[fxEmail].String()
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, idempotency.DefaultMaxStoredBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{key, "--succeeded", "--status", "700"}, exitUsage, "status 700 is not a final HTTP status (200–599)"},
		{[]string{key, "--succeeded", "--status", "201", "--header", "Location /x"}, exitUsage, `--header "Location /x": want 'NAME: VALUE'`},
		{[]string{key, "--succeeded", "--status", "201", "--header", "Bad Name: x"}, exitUsage, `header name "Bad Name" is not an HTTP token`},
		{[]string{key, "--succeeded", "--status", "201", "--header", "Content-Length: 3"}, exitUsage, "Content-Length"},
		{[]string{key, "--succeeded", "--status", "201", "--body", "@" + big}, exitUsage, "--body is 1048577 bytes, over the 1048576"},
		{[]string{key, "--succeeded", "--status", "201", "--body", "@/no/such/file"}, exitUsage, "--body @/no/such/file"},
		{[]string{key, "--succeeded", "--body", "{}"}, exitUsage, "give its status too (--status CODE)"},
		{[]string{key, "--failed", "--reason", "x", "--status", "201"}, exitUsage, "they go with --succeeded, not --failed"},
		{[]string{key, "--succeeded", "--status", "201", "--output", "{}"}, exitUsage, "not both"},
		{[]string{key, "--succeeded", "--output", "agentonce-http/1 201 sha256=00\n\n"}, exitUsage, "give its parts as --status CODE"},
		{[]string{key, "--succeeded", "--status", "201", "--body", "{}"}, exitUsage, "is an agent's tool call (email), not a request to the idempotency middleware"},
	}
	for _, tt := range tests {
		r := agentctl(t, false, append([]string{"resolve", "--journal", fx.path}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("resolve %v = %d, %q; want %d and one line containing %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if rec := getRecord(t, fx.path, key); rec.State != journal.StateUnknown {
		t.Errorf("after the refusals the record is %s; want unknown", rec.State)
	}
}
