package inbox_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/idempotency/inbox"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/journal/postgres"
)

// stores runs fn on each journal store: a bbolt file, and PostgreSQL when
// AGENTONCE_PG_URL is set.
func stores(t *testing.T, fn func(t *testing.T, open func() journal.Store)) {
	t.Run("bbolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "inbox.journal")
		fn(t, func() journal.Store { return openAt(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		schema := pgtest.Schema(t, "agentonce_inbox_")
		fn(t, func() journal.Store { return openPG(t, url, schema) })
	})
}

func openAt(t testing.TB, location string) journal.Store {
	t.Helper()
	s, err := journal.Open(context.Background(), location, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPG(t testing.TB, url, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// counter counts the events a handler really processed.
type counter struct{ n atomic.Int32 }

func (c *counter) add()       { c.n.Add(1) }
func (c *counter) count() int { return int(c.n.Load()) }

const whsec = "whsec_test_secret"

func deliver(t *testing.T, url string, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A Stripe webhook is processed once per event id, whatever the number of
// deliveries; a forged one is refused; a redelivery while the first is
// being processed gets 409 so that Stripe delivers it again later.
func TestInboxStripe(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		var l counter
		m, err := inbox.New(open(), inbox.StripeEvent(whsec, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		entered, release := make(chan struct{}, 1), make(chan struct{})
		mux := http.NewServeMux()
		mux.Handle("POST /webhooks/stripe", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.add()
			entered <- struct{}{}
			<-release
			fmt.Fprint(w, `{"received":true}`)
		})))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		url := srv.URL + "/webhooks/stripe"
		ev := `{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}`
		sig := signStripe(whsec, time.Now(), []byte(ev))

		if st, b := deliver(t, url, ev, "Stripe-Signature", "t=1,v1=00"); st != 401 || !strings.Contains(b, idempotency.ProblemUnauthenticated) {
			t.Errorf("forged delivery = %d %s; want 401", st, b)
		}
		first := make(chan int)
		go func() { st, _ := deliver(t, url, ev, "Stripe-Signature", sig); first <- st }()
		<-entered
		if st, _ := deliver(t, url, ev, "Stripe-Signature", signStripe(whsec, time.Now(), []byte(ev))); st != 409 {
			t.Errorf("redelivery while processing = %d; want 409", st)
		}
		close(release)
		if st := <-first; st != 200 {
			t.Errorf("first delivery = %d; want 200", st)
		}
		if st, b := deliver(t, url, ev, "Stripe-Signature", sig); st != 200 || b != `{"received":true}` {
			t.Errorf("redelivery = %d %s; want the stored 200", st, b)
		}
		if l.count() != 1 {
			t.Errorf("events processed = %d; want 1", l.count())
		}
	})
}

// GitHub's delivery id, behind its body signature; a generic header.
func TestInboxGitHubAndHeader(t *testing.T) {
	var l counter
	store := openAt(t, t.TempDir()+"/inbox.journal")
	gh, err := inbox.New(store, inbox.GitHubDelivery("ghsecret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := inbox.New(store, inbox.HeaderEvent("X-Message-Id"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.add(); w.WriteHeader(204) })
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/github", gh.Handler(h))
	mux.Handle("POST /queue", q.Handler(h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	body := `{"action":"opened"}`
	mac := hmac.New(sha256.New, []byte("ghsecret"))
	mac.Write([]byte(body))
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for range 3 {
		if st, b := deliver(t, srv.URL+"/webhooks/github", body, "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sig); st != 204 {
			t.Errorf("github delivery = %d %s; want 204", st, b)
		}
		if st, _ := deliver(t, srv.URL+"/queue", body, "X-Message-Id", "m-1"); st != 204 {
			t.Errorf("queue message = %d; want 204", st)
		}
	}
	if st, _ := deliver(t, srv.URL+"/webhooks/github", body, "X-GitHub-Delivery", "d-2", "X-Hub-Signature-256", "sha256=00"); st != 401 {
		t.Errorf("github delivery with a bad signature = %d; want 401", st)
	}
	if st, b := deliver(t, srv.URL+"/queue", body); st != 400 || !strings.Contains(b, "X-Message-Id") {
		t.Errorf("queue message without an id = %d %s; want 400 naming X-Message-Id", st, b)
	}
	if l.count() != 2 {
		t.Errorf("processed = %d; want 2 (one per event)", l.count())
	}
}

// On PostgreSQL with InTx the handler's row and the inbox record commit in
// one transaction: a handler that panics after its insert leaves no row,
// the event is processed again on redelivery, and once only.
func TestInboxInTx(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, "agentonce_inbox_")
	store := openPG(t, url, schema)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := pgx.Identifier{schema, "orders"}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (event text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := inbox.New(memory.New(nil), inbox.HeaderEvent("X-Id"), &idempotency.Options{InTx: true}); err == nil {
		t.Error("InTx on a store without CompleteWith: no error; want New to refuse it")
	}
	m, err := inbox.New(store, inbox.HeaderEvent("X-Id"), &idempotency.Options{InTx: true, ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	mux := http.NewServeMux()
	mux.Handle("POST /events", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		tx, ok := postgres.TxFrom(r.Context())
		if !ok {
			t.Error("no transaction in the handler's context")
			return
		}
		if _, err := tx.Exec(r.Context(), `INSERT INTO `+table+` VALUES ($1)`, r.Header.Get("X-Id")); err != nil {
			t.Error(err)
		}
		if calls == 1 {
			panic("crash after the insert")
		}
		w.WriteHeader(201)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for i := range 3 {
		req, _ := http.NewRequest("POST", srv.URL+"/events", strings.NewReader(`{}`))
		req.Header.Set("X-Id", "e-1")
		resp, err := http.DefaultClient.Do(req)
		if i == 0 {
			if err == nil {
				resp.Body.Close()
			}
			continue
		}
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("delivery %d: %v %v; want 201", i, resp, err)
		}
		resp.Body.Close()
	}
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || calls != 2 {
		t.Errorf("rows = %d, handler calls = %d; want 1 row (the panicked insert rolled back), 2 calls", rows, calls)
	}
}
