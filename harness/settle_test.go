package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// mailServer is a loopback mail API with no idempotency of its own. A send
// takes 500 ms and carries on after the client hangs up, the way a server
// that already accepted the request does; /sent answers truthfully whether
// mail for a key went out.
type mailServer struct {
	*httptest.Server
	mail ledger
}

func newMailServer(t *testing.T) *mailServer {
	m := &mailServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond) // r.Context() is ignored on purpose
		m.mail.effect(r.URL.Query().Get("key"))
		fmt.Fprint(w, `{"queued":true}`)
	})
	mux.HandleFunc("GET /sent", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"sent":%v}`, m.mail.happened(r.URL.Query().Get("key")))
	})
	m.Server = httptest.NewServer(mux)
	t.Cleanup(m.Close)
	return m
}

// Issue 13: after a timeout, Reconcile is asked at once, before the server
// has finished the request it is still processing; "not sent" is taken as
// proof and the mail is sent again (old code: three mails, Executed with 3
// attempts). Reconciliation must wait for the settle window.
func TestSettleBeforeReconcile(t *testing.T) {
	srv := newMailServer(t)
	h := probeHarness(t, probeBolt(t, nil), nil)
	client := srv.Client()
	probeRegister(t, h, harness.Tool{Name: "send_mail", Effect: journal.Unkeyed, Timeout: 200 * time.Millisecond,
		// The mail server may carry on for 500 ms after the request: the
		// tool declares that window (the default, its Timeout, is shorter).
		Settle: 600 * time.Millisecond,
		Retry:  &retryclass.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond},
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/send?key="+url.QueryEscape(ctxKey(ctx)), nil)
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			return json.RawMessage(`{"sent":true}`), nil
		},
		Reconcile: func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/sent?key="+key.String(), nil)
			resp, err := client.Do(req)
			if err != nil {
				return downstream.CannotTell(err)
			}
			defer resp.Body.Close()
			var v struct{ Sent bool }
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				return downstream.CannotTell(err)
			}
			if v.Sent {
				return downstream.Happened(json.RawMessage(`{"sent":true}`))
			}
			return downstream.DidNotHappen()
		}})

	res := h.Call(context.Background(), probeCall("send_mail", `{"to":"ann@example.com"}`))
	time.Sleep(time.Second) // let every request the server accepted finish
	if n := srv.mail.total(); n != 1 {
		t.Errorf("mails sent = %d; want 1", n)
	}
	if executedHere(res) && res.Attempts == 3 {
		t.Errorf("result: %s; want not executed with 3 attempts", describe(res))
	}
	if isFailed(res) || saidNothingHappened(res) {
		t.Errorf("result: %s; must not say nothing was done", describe(res))
	}
}
