package idempotency_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// approvalBody is the part of a problem body about an approval.
type approvalBody struct {
	Type       string `json:"type"`
	JournalKey string `json:"journal_key"`
	Approval   struct {
		Needed      int       `json:"needed"`
		Given       int       `json:"given"`
		Deadline    time.Time `json:"deadline"`
		Fingerprint string    `json:"fingerprint"`
		Approve     string    `json:"approve"`
		RejectedBy  string    `json:"rejected_by"`
		Reason      string    `json:"reason"`
	} `json:"approval"`
}

// awaitingAnswer checks that an answer says the request awaits approval,
// and returns its body.
func awaitingAnswer(t *testing.T, status int, h http.Header, body string, given int) approvalBody {
	t.Helper()
	var p approvalBody
	if err := json.Unmarshal([]byte(body), &p); err != nil || status != http.StatusConflict || h.Get("Retry-After") != "30" ||
		h.Get("Content-Type") != "application/problem+json" || !strings.HasSuffix(p.Type, idempotency.ProblemAwaitingApproval) ||
		p.Approval.Needed != 1 || p.Approval.Given != given || p.Approval.Deadline.IsZero() ||
		p.Approval.Approve != fmt.Sprintf("agentctl approve %s --fingerprint %s", p.JournalKey, p.Approval.Fingerprint) {
		t.Fatalf("answer %d Retry-After %q %s; want 409, 30, awaiting-approval needing 1 with %d given and the approver's command", status, h.Get("Retry-After"), body, given)
	}
	return p
}

func decide(t *testing.T, store journal.Store, p approvalBody, res journal.Resolution) error {
	t.Helper()
	key, err := uuid.Parse(p.JournalKey)
	if err != nil {
		t.Fatalf("journal key %q: %v", p.JournalKey, err)
	}
	if res.State == journal.StatePending && res.Fingerprint.IsZero() {
		b, err := hex.DecodeString(p.Approval.Fingerprint)
		if err != nil || len(b) != len(res.Fingerprint) {
			t.Fatalf("fingerprint %q: %v", p.Approval.Fingerprint, err)
		}
		copy(res.Fingerprint[:], b)
	}
	_, err = store.Resolve(context.Background(), key, res)
	return err
}

// A route that needs approval runs nothing until it has it: 409
// awaiting-approval with the approver's command, to the request and to
// every retry (Options.Wait does not make it wait); an approval of another
// request runs nothing; once approved, concurrent retries run the handler
// exactly once, through two servers on one journal (two processes on
// PostgreSQL), and its answer is replayed.
func TestApprovalRoute(t *testing.T) {
	stores(t, approvalRoute)
}

func approvalRoute(t *testing.T, open func() journal.Store) {
	store, other := open(), journal.Store(nil)
	if strings.Contains(t.Name(), "postgres") {
		other = open() // a second process's connection
	} else {
		other = store // one bbolt file, one process
	}
	var l ledger
	opts := &idempotency.Options{Wait: time.Minute, Approvals: map[string]int{"POST /v1/charges": 1}}
	urls := []string{chargeServer(t, store, opts, &l, nil).URL + "/v1/charges", chargeServer(t, other, opts, &l, nil).URL + "/v1/charges"}
	url := urls[0]

	st, h, b := post(t, url, "k1", `{"amount":900}`)
	if st == 0 && strings.Contains(t.Name(), "postgres") {
		t.Skipf("this PostgreSQL store cannot record a request awaiting approval: %s", b)
	}
	p := awaitingAnswer(t, st, h, b, 0)
	st, h, b = post(t, url, "k1", `{"amount":900}`)
	awaitingAnswer(t, st, h, b, 0)

	// The same key with another body is a mismatch, and approving another
	// input is refused: neither runs anything.
	if st, _, b := post(t, url, "k1", `{"amount":90000}`); st != http.StatusUnprocessableEntity || !strings.Contains(b, idempotency.ProblemKeyReused) {
		t.Errorf("another body: %d %s; want 422 key-reused", st, b)
	}
	if err := decide(t, store, p, journal.Resolution{State: journal.StatePending, By: "mallory", Fingerprint: keyderive.Fingerprint{1}}); err == nil {
		t.Errorf("an approval of another fingerprint was accepted")
	}
	st, h, b = post(t, url, "k1", `{"amount":900}`)
	awaitingAnswer(t, st, h, b, 0)
	if l.count() != 0 {
		t.Fatalf("effects before approval = %d; want 0", l.count())
	}

	if err := decide(t, store, p, journal.Resolution{State: journal.StatePending, By: "alice"}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	var wg sync.WaitGroup
	var created atomic.Int32
	answers := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, b := post(t, urls[i%2], "k1", `{"amount":900}`)
			if st == http.StatusCreated {
				created.Add(1)
				answers <- b
			} else if st != http.StatusConflict || !strings.Contains(b, idempotency.ProblemInFlight) {
				t.Errorf("a retry after approval: %d %s; want 201, or 409 in-flight while it runs", st, b)
			}
		}()
	}
	wg.Wait()
	close(answers)
	if l.count() != 1 || created.Load() == 0 {
		t.Fatalf("after approval: %d effects, %d answered 201; want 1 and at least 1", l.count(), created.Load())
	}
	first := <-answers
	for b := range answers {
		if b != first {
			t.Errorf("answers differ: %q and %q", first, b)
		}
	}
	if st, h, b := post(t, url, "k1", `{"amount":900}`); st != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || b != first {
		t.Errorf("a retry after the run: %d replayed %q %s; want 201, true, %s", st, h.Get("Idempotent-Replayed"), b, first)
	}
	if l.count() != 1 {
		t.Errorf("effects = %d; want 1", l.count())
	}
}

// A rejected request, and one not approved by its deadline, are answered
// 422 for good, saying why and who decided; nothing runs.
func TestApprovalRouteRejectedOrExpired(t *testing.T) {
	var skew atomic.Int64
	store, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "server.journal"),
		&journal.Options{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var l ledger
	srv := chargeServer(t, store, &idempotency.Options{ApprovalTTL: time.Hour, Approvals: map[string]int{"POST /v1/charges": 1}}, &l, nil)
	url := srv.URL + "/v1/charges"

	st, h, b := post(t, url, "rejected", `{"amount":1}`)
	p := awaitingAnswer(t, st, h, b, 0)
	if err := decide(t, store, p, journal.Resolution{State: journal.StateSuppressed, By: "carol", Reason: "not this customer"}); err != nil {
		t.Fatalf("reject: %v", err)
	}
	st, h, b = post(t, url, "expired", `{"amount":2}`)
	p = awaitingAnswer(t, st, h, b, 0)
	skew.Store(int64(2 * time.Hour)) // past its deadline on the journal's clock

	for _, tc := range []struct{ key, kind, says string }{
		{"rejected", idempotency.ProblemApprovalRejected, `"rejected_by":"carol","reason":"not this customer"`},
		{"expired", idempotency.ProblemApprovalExpired, "approval deadline"},
	} {
		for range 2 {
			st, _, b := post(t, url, tc.key, fmt.Sprintf(`{"amount":%d}`, map[string]int{"rejected": 1, "expired": 2}[tc.key]))
			if st != http.StatusUnprocessableEntity || !strings.Contains(b, tc.kind) || !strings.Contains(b, tc.says) {
				t.Errorf("%s: %d %s; want 422 %s saying %s", tc.key, st, b, tc.kind, tc.says)
			}
		}
	}
	if err := decide(t, store, p, journal.Resolution{State: journal.StatePending, By: "dave"}); err == nil {
		t.Errorf("an approval after the deadline was accepted")
	}
	if l.count() != 0 {
		t.Errorf("effects = %d; want 0", l.count())
	}
}

// The gate cannot be walked around: a request without a key on a route
// that needs approval gets 400, a middleware that cannot see the route
// pattern (it wraps the mux) refuses to run anything, and New refuses a
// route the middleware would pass through.
func TestApprovalRouteFailsClosed(t *testing.T) {
	store := openAt(t, filepath.Join(t.TempDir(), "server.journal"))
	var l ledger
	opts := &idempotency.Options{Approvals: map[string]int{"POST /v1/charges": 1}}
	srv := chargeServer(t, store, opts, &l, nil)
	if st, _, b := post(t, srv.URL+"/v1/charges", "", `{"amount":1}`); st != http.StatusBadRequest || !strings.Contains(b, idempotency.ProblemKeyRequired) {
		t.Errorf("no key: %d %s; want 400 key-required", st, b)
	}

	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", func(w http.ResponseWriter, r *http.Request) { l.add("") })
	wrapped := httptest.NewServer(m.Handler(mux))
	t.Cleanup(wrapped.Close)
	if st, _, _ := post(t, wrapped.URL+"/v1/charges", "k1", `{"amount":1}`); st != http.StatusInternalServerError {
		t.Errorf("the mux wrapped: %d; want 500", st)
	}
	if l.count() != 0 {
		t.Errorf("effects = %d; want 0", l.count())
	}

	for _, bad := range []map[string]int{{"GET /v1/charges": 1}, {"POST /v1/charges": -1}} {
		if _, err := idempotency.New(store, &idempotency.Options{Approvals: bad}); err == nil {
			t.Errorf("New with Approvals %v: no error", bad)
		}
	}
}
