package harness_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/retryclass"
)

// refusingPayments is a loopback payment API whose first request for a key
// commits the charge and then fails to answer (500), and which refuses any
// later request with that key with 417, as express-idempotency does for a
// key reused with another body.
type refusingPayments struct {
	*httptest.Server
	mu      sync.Mutex
	seen    map[string]bool
	charges int
}

func newRefusingPayments(t *testing.T) *refusingPayments {
	p := &refusingPayments{seen: map[string]bool{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.seen[key] {
			http.Error(w, "idempotency key reused with a different request", http.StatusExpectationFailed)
			return
		}
		p.seen[key] = true
		p.charges++
		http.Error(w, "internal error after commit", http.StatusInternalServerError)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *refusingPayments) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charges
}

func (p *refusingPayments) tool(goexitAfterCharge bool) harness.Tool {
	client := &http.Client{Transport: &downstream.Transport{Base: p.Client().Transport}}
	return harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", p.URL, nil)
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if goexitAfterCharge {
				runtime.Goexit() // the process dies before the outcome is recorded
			}
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			return json.RawMessage(`{"charged":true}`), nil
		}}
}

// Issue 13: a Keyed charge commits, its answer is lost (500), and the retry
// under the same key is refused (417, a terminal class). The old code
// records Failed and tells the model "nothing was done" after a charge.
func TestRefusalAfterMaybeExecuted(t *testing.T) {
	pay := newRefusingPayments(t)
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, pay.tool(false))
	res := h.Call(context.Background(), probeCall("charge", `{"amount":4900}`))
	if n := pay.count(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if isFailed(res) || saidNothingHappened(res) {
		t.Errorf("result: %s; want neither failed nor \"nothing was done\" after a maybe-executed attempt", describe(res))
	}
	// docs/design.md, retry classes: a refusal after a maybe-executed attempt
	// of a Keyed tool is suppressed.
	if !isSuppressed(res) {
		t.Errorf("result: %s; want suppressed", describe(res))
	}
}

// The same after a crash: the first agent charges and dies before
// recording the outcome; the second agent's retry (a takeover once the lease
// expired) is refused with 417.
func TestRefusalAfterCrash(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) journal.Store{
		"memory":   func(t *testing.T) journal.Store { return memory.New(nil) },
		"postgres": func(t *testing.T) journal.Store { return probePG(t, "", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			pay := newRefusingPayments(t)
			lease := 200 * time.Millisecond
			h1 := harness.New(st, &harness.Options{Owner: "crashed", LeaseTTL: lease, Retry: probeRetry})
			probeRegister(t, h1, pay.tool(true))
			c := probeCall("charge", `{"amount":4900}`)
			done := make(chan struct{})
			go func() {
				defer close(done)
				h1.Call(context.Background(), c)
			}()
			<-done
			if n := pay.count(); n != 1 {
				t.Fatalf("charges after the crash = %d; want 1", n)
			}
			// A Keyed intent has no settle window: the lease is all to wait.
			time.Sleep(lease + 100*time.Millisecond)

			h2 := probeHarness(t, st, &harness.Options{Owner: "restarted", LeaseTTL: lease})
			probeRegister(t, h2, pay.tool(false))
			res := h2.Call(context.Background(), c)
			if n := pay.count(); n != 1 {
				t.Errorf("charges = %d; want 1", n)
			}
			if isFailed(res) || saidNothingHappened(res) {
				t.Errorf("result after the crash: %s; want neither failed nor \"nothing was done\"", describe(res))
			}
			if !isSuppressed(res) {
				t.Errorf("result after the crash: %s; want suppressed", describe(res))
			}
		})
	}
}
