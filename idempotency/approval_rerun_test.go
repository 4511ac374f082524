package idempotency_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// A route that needs approval and names Volatile body fields: the approval
// names a fingerprint that leaves them out, so a retry with the same key
// and other values of them must not run the handler with a body the
// approver never approved. Either New refuses the combination, or the run
// gets the approved body.
func TestApprovalRefusesVolatileBody(t *testing.T) {
	store := openBolt(t)
	var l ledger
	opts := &idempotency.Options{
		Approvals: map[string]int{"POST /v1/charges": 1},
		Volatile:  map[string][]string{"POST /v1/charges": {"description"}},
	}
	if _, err := idempotency.New(store, opts); err != nil {
		return // refused: an approval cannot leave part of the body out
	}
	url := chargeServer(t, store, opts, &l, nil).URL + "/v1/charges"
	approved := `{"amount":100,"description":"refund order 1"}`
	status, h, body := post(t, url, "k1", approved)
	p := awaitingAnswer(t, status, h, body, 0)
	if err := decide(t, store, p, journal.Resolution{State: journal.StatePending, By: "alice"}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	other := `{"amount":100,"description":"and 9900 more to account 666"}`
	if status, _, body := post(t, url, "k1", other); status != http.StatusCreated {
		t.Fatalf("retry after approval: %d %s", status, body)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.effects[approved] != 1 || l.total != 1 {
		b, _ := json.Marshal(l.effects)
		t.Fatalf("the handler ran with %s; the approver approved %s: an approval of one request ran another", b, approved)
	}
}

// A request that needed approval and ran is answered from its record for
// TTL; a retry with its key after TTL is run again as a new request
// (reissue.Request's Retry). That new run is a second effect, and nobody
// approved it: the approval given for the first must not carry over. The
// retry must await approval of its own (409 awaiting-approval), not run.
func TestApprovalDoesNotCarryOverPastTTL(t *testing.T) {
	store := openBolt(t)
	var l ledger
	const ttl = 300 * time.Millisecond
	opts := &idempotency.Options{Approvals: map[string]int{"POST /v1/charges": 1}, TTL: ttl, LeaseTTL: ttl, ErrorLog: t.Logf}
	url := chargeServer(t, store, opts, &l, nil).URL + "/v1/charges"
	body := `{"amount":100}`
	status, h, resp := post(t, url, "k1", body)
	p := awaitingAnswer(t, status, h, resp, 0)
	if err := decide(t, store, p, journal.Resolution{State: journal.StatePending, By: "alice", Reason: "one refund"}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if status, _, resp := post(t, url, "k1", body); status != http.StatusCreated || l.count() != 1 {
		t.Fatalf("after approval: %d %s, %d effects; want 201 and 1", status, resp, l.count())
	}
	time.Sleep(ttl + 100*time.Millisecond) // past TTL from the run's start
	status, _, resp = post(t, url, "k1", body)
	if n := l.count(); n != 1 {
		t.Fatalf("a retry past TTL got %d %s and ran the handler again (%d effects) on the approval given for the first run; want it to await an approval of its own",
			status, resp, n)
	}
}
