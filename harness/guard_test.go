package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// Issue 14: the suppression guard (a suppressed call arms it; calls of the
// same tool in the same turn with altered input are refused) is consulted
// only when a new record is created. A retake of a "not executed" failure
// walks around it, and a local fingerprint mismatch never arms it.

// guardPayments is a loopback payment API: the first charge of 50 is
// refused with 429 (provably not executed), any charge of 49 with 422, and
// every other request charges.
type guardPayments struct {
	*httptest.Server
	mu      sync.Mutex
	saw50   bool
	charges []int
}

func newGuardPayments(t *testing.T) *guardPayments {
	p := &guardPayments{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a amountIn
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case a.Amount == 50 && !p.saw50:
			p.saw50 = true
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case a.Amount == 49:
			http.Error(w, "idempotency key reused with another payload", http.StatusUnprocessableEntity)
		default:
			p.charges = append(p.charges, a.Amount)
			fmt.Fprintf(w, `{"charged":%d}`, a.Amount)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *guardPayments) charged() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.charges...)
}

func (p *guardPayments) tool() harness.Tool {
	client := &http.Client{Transport: &downstream.Transport{Base: p.Client().Transport}}
	return harness.Tool{Name: "charge", Effect: journal.Keyed,
		Retry: &retryclass.Policy{MaxAttempts: 1},
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", p.URL, bytes.NewReader(in))
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			var out json.RawMessage
			err = json.NewDecoder(resp.Body).Decode(&out)
			return out, err
		}}
}

// 50 fails not executed (429), 49 is suppressed (422): 51 and the re-issued
// 50 are altered input in the same turn and must both be refused.
func TestGuardRetakeOfNotExecuted(t *testing.T) {
	pay := newGuardPayments(t)
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, pay.tool())
	ctx := context.Background()
	charge := func(amount int) harness.Result {
		r := h.Call(ctx, probeCall("charge", fmt.Sprintf(`{"amount":%d}`, amount)))
		return r
	}

	if r := charge(50); !isFailed(r) {
		t.Fatalf("charge 50 (429, one attempt): %s; want failed", describe(r))
	}
	if r := charge(49); !isSuppressed(r) {
		t.Fatalf("charge 49 (422): %s; want suppressed", describe(r))
	}
	if r := charge(51); !isSuppressed(r) {
		t.Errorf("charge 51 after the suppression: %s; want suppressed by the guard", describe(r))
	}
	if r := charge(50); !isSuppressed(r) {
		t.Errorf("charge 50 again after the suppression: %s; want suppressed by the guard", describe(r))
	}
	if got := pay.charged(); len(got) != 0 {
		t.Errorf("charges = %v; want none", got)
	}
}

// A-1001 at 4900 runs, A-1001 at 5900 is a local mismatch: the model
// dodging the step key with a-1001 at 5900 must be refused.
func TestGuardArmedByMismatch(t *testing.T) {
	pay := newGuardPayments(t)
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, pay.tool())
	ctx := context.Background()
	charge := func(step string, amount int) harness.Result {
		c := probeCall("charge", fmt.Sprintf(`{"amount":%d}`, amount))
		c.StepKey = step
		r := h.Call(ctx, c)
		return r
	}

	if r := charge("A-1001", 4900); !isSuccess(r) {
		t.Fatalf("A-1001 4900: %s; want success", describe(r))
	}
	if r := charge("A-1001", 5900); !isSuppressed(r) {
		t.Fatalf("A-1001 5900: %s; want suppressed (fingerprint mismatch)", describe(r))
	}
	if r := charge("a-1001", 5900); !isSuppressed(r) {
		t.Errorf("a-1001 5900 after the mismatch: %s; want suppressed by the guard", describe(r))
	}
	if got := pay.charged(); len(got) != 1 {
		t.Errorf("charges = %v; want [4900]", got)
	}
}
