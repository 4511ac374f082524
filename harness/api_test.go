package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

func TestToolsListsRegisteredTools(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	mustRegister(t, h,
		harness.Tool{Name: "send_email", Description: "Send an email.", Func: fn},
		harness.Tool{Name: "charge_card", Description: "Charge a card.", Effect: journal.Keyed, Func: fn})
	ts := h.Tools()
	if len(ts) != 2 || ts[0].Name != "charge_card" || ts[1].Name != "send_email" {
		t.Fatalf("Tools() = %+v; want charge_card then send_email", ts)
	}
	if ts[0].Description != "Charge a card." || ts[0].Effect != journal.Keyed {
		t.Errorf("Tools()[0] = %q %v; want its description and effect kind", ts[0].Description, ts[0].Effect)
	}
}

// A call with no session or no turn would merge every identical call into
// one intent forever: refused, nothing recorded, unless a step key names
// the intent.
func TestCallNeedsSessionAndTurn(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	runs := 0
	mustRegister(t, h, harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`1`), nil
		}})
	for _, c := range []harness.ToolCall{
		{Tenant: "acme", Session: "s1", Tool: "charge", Input: json.RawMessage(`{}`)},
		{Tenant: "acme", Turn: "1", Tool: "charge", Input: json.RawMessage(`{}`)},
	} {
		res := h.Call(context.Background(), c)
		if res.Status != harness.Rejected || !errors.Is(res.Err, harness.ErrNoTurn) {
			t.Errorf("Call(session %q, turn %q) = %v, %v; want rejected with ErrNoTurn", c.Session, c.Turn, res.Status, res.Err)
		}
	}
	if runs != 0 {
		t.Errorf("tool runs = %d; want 0", runs)
	}
	if s, err := st.Stats(context.Background()); err != nil || s.Records != 0 {
		t.Errorf("records = %d (%v); want 0", s.Records, err)
	}
	res := h.Call(context.Background(), harness.ToolCall{Tenant: "acme", Tool: "charge", StepKey: "order:A-1", Input: json.RawMessage(`{}`)})
	if !res.OK() {
		t.Errorf("Call(step key, no turn) = %v, %v; want success", res.Status, res.Err)
	}
}

func TestNoTurnToolAllowsEmptyTurn(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	mustRegister(t, h, harness.Tool{Name: "ping", Effect: journal.Idempotent, NoTurn: true,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
	if res := h.Call(context.Background(), harness.ToolCall{Tenant: "acme", Tool: "ping", Input: json.RawMessage(`{}`)}); !res.OK() {
		t.Errorf("Call(NoTurn tool, no turn) = %v, %v; want success", res.Status, res.Err)
	}
}

func TestReadJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`{"id":1}`))
		case "/boom":
			w.WriteHeader(500)
			w.Write([]byte(`{"error":"db down"}`))
		case "/cut":
			w.Write([]byte(`{"id":`))
		}
	}))
	defer srv.Close()
	out, err := downstream.ReadJSON(srv.Client().Get(srv.URL + "/ok"))
	if err != nil || string(out) != `{"id":1}` {
		t.Errorf("ReadJSON(200) = %s, %v; want the body", out, err)
	}
	_, err = downstream.ReadJSON(srv.Client().Get(srv.URL + "/boom"))
	if v := retryclass.Classify(err); v.Class != retryclass.MaybeExecuted || v.Status != 500 {
		t.Errorf("ReadJSON(500) error classifies as %v (status %d); want maybe-executed 500", v.Class, v.Status)
	}
	_, err = downstream.ReadJSON(srv.Client().Get(srv.URL + "/cut"))
	if v := retryclass.Classify(err); err == nil || v.Class != retryclass.MaybeExecuted {
		t.Errorf("ReadJSON(200, cut body) = %v (%v); want a maybe-executed error", err, v.Class)
	}
}

// A tool that panics with an error: errors.Is sees through the
// *PanicError, as through singleflight's.
func TestPanicErrorUnwraps(t *testing.T) {
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	boom := errors.New("boom")
	mustRegister(t, h, harness.Tool{Name: "p", Effect: journal.Keyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { panic(boom) }})
	res := h.Call(context.Background(), call("p", `{}`))
	var pe *harness.PanicError
	if !errors.As(res.Err, &pe) || !errors.Is(res.Err, boom) || bytes.HasPrefix(pe.Stack, []byte("goroutine ")) {
		t.Errorf("Call(panicking tool) err = %v; want a *PanicError that unwraps to boom, its stack without the goroutine header", res.Err)
	}
}

// Close waits for a flight whose callers all left: its outcome is
// recorded before the journal closes, so a restart replays it instead of
// running the tool again.
func TestCloseWaitsForAFlightItsCallersLeft(t *testing.T) {
	path, st := tempJournal(t)
	h := harness.New(st, &harness.Options{Retry: fastRetry})
	runs := 0
	release := make(chan struct{})
	mustRegister(t, h, harness.Tool{Name: "slow", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			<-release
			return json.RawMessage(`"done"`), nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan harness.Result)
	go func() { left <- h.Call(ctx, call("slow", `{}`)) }()
	time.Sleep(20 * time.Millisecond) // the tool is running
	cancel()
	if res := <-left; res.Status != harness.InProgress {
		t.Fatalf("caller that left = %v; want in progress", res.Status)
	}
	closed := make(chan error)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the flight still ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2 := openBolt(t, path, nil)
	defer st2.Close()
	h2 := newHarness(t, st2, nil)
	mustRegister(t, h2, harness.Tool{Name: "slow", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`"again"`), nil
		}})
	if res := mustCall(t, h2, call("slow", `{}`)); !res.OK() || res.Source != harness.Replayed || runs != 1 {
		t.Errorf("after restart = %v (%v) %s, tool runs %d; want the recorded success replayed, 1 run", res.Status, res.Source, res.Output, runs)
	}
}

// A call refused before it reached a flight is reported too, so that an
// Observer counts every call.
func TestEarlyRejectionIsObserved(t *testing.T) {
	_, st := tempJournal(t)
	var results []harness.Event
	h := newHarness(t, st, &harness.Options{Observer: harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		if e.Kind == harness.EventResult {
			results = append(results, e)
		}
	})})
	h.Call(context.Background(), call("nope", `{}`))
	h.CallAll(context.Background(), []harness.ToolCall{call("nope", `{}`), call("nope", `{"bad":`)})
	if len(results) != 3 {
		t.Fatalf("result events = %d; want 3", len(results))
	}
	for _, e := range results {
		if e.Status != harness.Rejected || e.Err == nil {
			t.Errorf("result event = %+v; want rejected with its error", e)
		}
	}
}
