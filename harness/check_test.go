package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// Issue 23, item 1: an Unkeyed tool with a Reconcile hook runs again only
// on evidence that survives a downstream slower than declared, and the
// caller never waits for the check beyond Options.CheckWait.

// slowMail is a loopback mail API with no idempotency of its own: a send
// takes delay and carries on after the client hangs up (r.Context() is
// ignored on purpose); gate, when set, holds every send until it is
// closed. /sent answers truthfully whether mail for a key went out.
type slowMail struct {
	*httptest.Server
	delay time.Duration
	gate  chan struct{}
	mail  ledger // effect: a mail went out
	acted chan struct{}

	mu     sync.Mutex // guards begun and gaveUp
	begun  int        // sends begun
	gaveUp time.Time  // when the tool last gave up on a send
}

func (m *slowMail) lastGaveUp() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gaveUp
}

func newSlowMail(t *testing.T, delay time.Duration, gate chan struct{}) *slowMail {
	m := &slowMail{delay: delay, gate: gate, acted: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		m.mu.Lock()
		m.begun++
		m.mu.Unlock()
		time.Sleep(m.delay)
		if m.gate != nil {
			<-m.gate
		}
		m.mail.effect(key)
		m.acted <- struct{}{}
		fmt.Fprint(w, `{"queued":true}`)
	})
	mux.HandleFunc("GET /sent", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"sent":%v}`, m.mail.happened(r.URL.Query().Get("key")))
	})
	m.Server = httptest.NewServer(mux)
	t.Cleanup(m.Close)
	return m
}

// sends counts the sends the server began: how often the tool ran.
func (m *slowMail) sends() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.begun
}

// sent asks the API whether mail for key went out, as a Reconcile hook.
func (m *slowMail) sent(ctx context.Context, key uuid.UUID) (bool, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", m.URL+"/sent?key="+key.String(), nil)
	resp, err := m.Client().Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var v struct{ Sent bool }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return false, err
	}
	return v.Sent, nil
}

// tool is send_mail over m: Timeout 200 ms, a truthful Reconcile, and the
// given Settle (zero: the default).
func (m *slowMail) tool(settle time.Duration, reconcile func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation) harness.Tool {
	if reconcile == nil {
		reconcile = func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
			sent, err := m.sent(ctx, key)
			switch {
			case err != nil:
				return downstream.CannotTell(err)
			case sent:
				return downstream.Happened(json.RawMessage(`{"sent":true}`))
			}
			return downstream.DidNotHappen()
		}
	}
	return harness.Tool{Name: "send_mail", Effect: journal.Unkeyed, Timeout: 200 * time.Millisecond, Settle: settle,
		Retry: &retryclass.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond},
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", m.URL+"/send?key="+ctxKey(ctx), nil)
			resp, err := m.Client().Do(req)
			if err != nil {
				m.mu.Lock()
				m.gaveUp = time.Now()
				m.mu.Unlock()
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, retryclass.ResponseError(resp)
			}
			return json.RawMessage(`{"sent":true}`), nil
		},
		Reconcile: reconcile}
}

// waitActed waits (a generous bound, not a timing assertion) until the
// mail API has sent n mails.
func (m *slowMail) waitActed(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-m.acted:
		case <-time.After(30 * time.Second):
			t.Fatalf("the mail API sent %d mails within 30 s; want %d", m.mail.total(), n)
		}
	}
}

// The probe of issue 23: Timeout 200 ms, a mail API that takes 500 ms and
// sends after the client hung up, Settle left at its default. Old code
// waited a settle window of the timeout (200 ms), heard a truthful "not
// sent", and sent the mail again: 2 mails, every run, and the caller
// waited for all of it. Now: 1 mail, and the caller is answered InProgress
// while the check goes on; a re-issue joins it and runs nothing.
func TestNoRerunOnTimingGuess(t *testing.T) {
	srv := newSlowMail(t, 500*time.Millisecond, nil)
	h := probeHarness(t, probeBolt(t, nil), nil)
	probeRegister(t, h, srv.tool(0, nil))
	c := probeCall("send_mail", `{"to":"ann@example.com"}`)

	res := h.Call(context.Background(), c)
	if !isInProgress(res) || saidNothingHappened(res) || saidDidNotRun(res) {
		t.Errorf("first call: %s; want in progress (the outcome is being checked)", describe(res))
	}
	if !strings.Contains(res.ForModel(), "being checked") || !strings.Contains(res.ForModel(), "Do not retry") {
		t.Errorf("ForModel = %q; want it to say the outcome is being checked and not to retry", res.ForModel())
	}
	srv.waitActed(t, 1)
	again := h.Call(context.Background(), c)
	if !isInProgress(again) && !isSuccess(again) {
		t.Errorf("re-issue: %s; want in progress (the check goes on) or the reconciled success", describe(again))
	}
	if executedHere(again) {
		t.Errorf("re-issue: %s; the tool ran again", describe(again))
	}
	if n := srv.sends(); n != 1 {
		t.Errorf("sends begun = %d; want 1", n)
	}
	if n := srv.mail.total(); n != 1 {
		t.Errorf("mails sent = %d; want 1", n)
	}
}

// A downstream slower than its tool declared: the tool says its settle
// window is 100 ms, but the mail goes out only right after the first "not
// sent" that follows the window (the gate opens then). The harness waits
// another settle window and asks again before it runs anything, and the
// second answer finds the mail. Old code believed the first "not sent"
// and sent a second mail.
func TestSecondDidNotHappen(t *testing.T) {
	gate := make(chan struct{})
	var open sync.Once
	openGate := func() { open.Do(func() { close(gate) }) }
	srv := newSlowMail(t, 0, gate)
	// Before the server's Close (cleanups run last first), which waits
	// for a send held at the gate: a run that never opened it fails
	// instead of hanging.
	t.Cleanup(openGate)
	var opened bool
	reconcile := func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
		sent, err := srv.sent(ctx, key) // the harness asks one at a time
		if err != nil {
			return downstream.CannotTell(err)
		}
		if sent {
			return downstream.Happened(json.RawMessage(`{"sent":true}`))
		}
		// An answer asked as the tool gave up (the early one) leaves the
		// gate shut; the first one asked after the settle window (100 ms
		// after the tool gave up, at the soonest) opens it, and the mail
		// goes out at once. A late early ask only opens it sooner.
		if !opened && time.Since(srv.lastGaveUp()) >= 50*time.Millisecond {
			opened = true
			openGate()
			srv.waitActed(t, 1)
		}
		return downstream.DidNotHappen()
	}
	h := probeHarness(t, probeBolt(t, nil), &harness.Options{CheckWait: time.Minute})
	probeRegister(t, h, srv.tool(100*time.Millisecond, reconcile))

	res := h.Call(context.Background(), probeCall("send_mail", `{"to":"ann@example.com"}`))
	if !isSuccess(res) || res.Source != harness.Reconciled {
		t.Errorf("result: %s; want the reconciled success", describe(res))
	}
	if n := srv.sends(); n != 1 {
		t.Errorf("sends begun = %d; want 1", n)
	}
	if n := srv.mail.total(); n != 1 {
		t.Errorf("mails sent = %d; want 1", n)
	}
}

// A Harness closed while its check waits out the settle window leaves the
// record pending, as a crash would; the next Open on the journal checks it
// once the window has passed, and finds the mail: 1 mail, a reconciled
// success.
func TestCloseLeavesCheckPending(t *testing.T) {
	srv := newSlowMail(t, 500*time.Millisecond, nil)
	path := filepath.Join(t.TempDir(), "agent.journal")
	tool := srv.tool(time.Second, nil)
	c := probeCall("send_mail", `{"to":"ann@example.com"}`)

	st := openBolt(t, path, nil)
	h := harness.New(st, &harness.Options{Retry: probeRetry, CheckWait: -1})
	probeRegister(t, h, tool)
	res := h.Call(context.Background(), c)
	if !isInProgress(res) {
		t.Errorf("first call: %s; want in progress", describe(res))
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	rec, err := st.Get(context.Background(), res.Key)
	if err != nil || rec.State != journal.StatePending || reissue.QuietAt(&rec).IsZero() {
		t.Errorf("record after Close: %v (QuietAt %v), %v; want pending with its settle window", rec.State, reissue.QuietAt(&rec), err)
	}
	st.Close()
	srv.waitActed(t, 1)

	st2 := openBolt(t, path, nil)
	defer st2.Close()
	h2 := harness.New(st2, &harness.Options{Retry: probeRetry, CheckWait: time.Minute})
	defer h2.Close()
	probeRegister(t, h2, tool)
	var again harness.Result
	for range 100 { // until the settle window has passed; a bound, not a timing assertion
		if again = h2.Call(context.Background(), c); !isInProgress(again) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !isSuccess(again) || again.Source != harness.Reconciled {
		t.Errorf("after reopening: %s; want the reconciled success", describe(again))
	}
	if n := srv.sends(); n != 1 {
		t.Errorf("sends begun = %d; want 1", n)
	}
	if n := srv.mail.total(); n != 1 {
		t.Errorf("mails sent = %d; want 1", n)
	}
}

// Issue 23, item 6: a re-issue shortly after an owner stopped, while its
// attempt's settle window is open, was told "in progress elsewhere" though
// nothing runs anywhere. It must be told that an earlier attempt may still
// be acting downstream, and when the intent will be checked.
func TestSettleWindowIsSaid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.journal")
	c := probeCall("send_mail", `{"to":"ann@example.com"}`)
	st := openBolt(t, path, nil)
	d := keyderive.Deriver{Namespace: st.Namespace()}
	dv, err := d.Derive(keyderive.Intent{Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool}, c.Input)
	if err != nil {
		t.Fatal(err)
	}
	// An owner began the attempt (durably) and stopped: its lease ends with
	// the next open, its settle window (10 minutes) does not.
	br, err := st.Begin(context.Background(), journal.BeginRequest{Key: dv.Key, Fingerprint: dv.Fingerprint, Input: dv.Canonical,
		Intent: keyderive.Intent{Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool}, Effect: journal.Unkeyed,
		Owner: "stopped", AttemptID: "stopped#1", LeaseTTL: time.Minute, Settle: 10 * time.Minute, Durable: true})
	if err != nil || br.Outcome != journal.Started {
		t.Fatalf("Begin: %v, %v; want started", br.Outcome, err)
	}
	quiet := reissue.QuietAt(&br.Record)
	st.Close()

	st2 := openBolt(t, path, nil)
	defer st2.Close()
	h := probeHarness(t, st2, nil)
	var runs, asks int
	probeRegister(t, h, harness.Tool{Name: "send_mail", Effect: journal.Unkeyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`{"sent":true}`), nil
		},
		Reconcile: func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation {
			asks++
			return downstream.DidNotHappen()
		}})
	res := h.Call(context.Background(), c)
	oe, _ := res.Err.(*harness.OutcomeError)
	if !isInProgress(res) || oe == nil || strings.Contains(oe.Message, "elsewhere") ||
		!strings.Contains(oe.Message, "may still be acting downstream") || !strings.Contains(oe.Message, quiet.UTC().Format(time.RFC3339)) {
		t.Errorf("re-issue in the settle window: %s; want in progress, saying an earlier attempt may still be acting downstream until %s",
			describe(res), quiet.UTC().Format(time.RFC3339))
	}
	if oe != nil && !oe.CheckAt.Equal(quiet) {
		t.Errorf("CheckAt = %v; want the settle window's end %v", oe.CheckAt, quiet)
	}
	if m := res.ForModel(); !strings.Contains(m, "being checked") || strings.Contains(m, "already in progress") {
		t.Errorf("ForModel = %q; want it to say the outcome is being checked", m)
	}
	if runs != 0 || asks != 0 {
		t.Errorf("tool runs = %d, Reconcile asks = %d; want 0 and 0 inside the settle window", runs, asks)
	}
}

// Many re-issues while a check runs, from many goroutines (under -race):
// each joins the check and is told it is in progress, and the tool ran
// once.
func TestCheckJoinedByReissues(t *testing.T) {
	srv := newSlowMail(t, 500*time.Millisecond, nil)
	h := probeHarness(t, probeBolt(t, nil), &harness.Options{CheckWait: 50 * time.Millisecond})
	probeRegister(t, h, srv.tool(0, nil))
	c := probeCall("send_mail", `{"to":"ann@example.com"}`)
	if res := h.Call(context.Background(), c); !isInProgress(res) {
		t.Fatalf("first call: %s; want in progress", describe(res))
	}
	var wg sync.WaitGroup
	results := make([]harness.Result, 40)
	for i := range results {
		wg.Go(func() { results[i] = h.Call(context.Background(), c) })
	}
	wg.Wait()
	for i, r := range results {
		if !isInProgress(r) || executedHere(r) {
			t.Errorf("re-issue %d: %s; want in progress (joined the check)", i, describe(r))
		}
	}
	srv.waitActed(t, 1)
	if n := srv.sends(); n != 1 {
		t.Errorf("sends begun = %d; want 1", n)
	}
}
