package idempotency_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// A route that needs approval and names Volatile body fields: the approval
// names a fingerprint that leaves them out, so a retry with the same key
// and other values of them must not run the handler with a body the
// approver never approved. Either New refuses the combination, or the run
// gets the approved body.
func TestProbeApprovalVolatileRunsUnapprovedBody(t *testing.T) {
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
