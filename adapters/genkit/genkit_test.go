package genkit_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"

	"github.com/agentonce/agentonce"
	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
)

var userTurn = []*ai.Message{ai.NewUserTextMessage("Charge me $49.")}

// The model asks for the same charge twice in one response, and genkit
// runs both tool requests at once: one charge, and the model reads it
// under both refs.
func TestParallelDuplicate(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if !readTool(req) {
			return chargeRequest("call_1", "call_2")
		}
		return ai.NewModelTextMessage("Charged $49.")
	}}
	ag := newAgent(t, m, openHarness(t, journalPath(t)), s.URL, nil, false)

	resp, err := ag.generate(agentgenkit.WithSession(context.Background(), "conv-1", userTurn), ai.WithMessages(userTurn...))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Charged $49." {
		t.Errorf("answer = %q; want %q", resp.Text(), "Charged $49.")
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	got := m.toolOutputs(t, 2)
	if got["call_1"] != ch1 || got["call_2"] != ch1 {
		t.Errorf("the model read %v; want the one charge ch_1 under both refs", got)
	}
}

// The shop's answer is lost after it charged: the harness sends the charge
// again with the same Idempotency-Key and the shop replays it. The model
// asks again in the same turn and is answered from the journal.
func TestRetryAfterLostAnswer(t *testing.T) {
	s := newShop(t)
	ft := agentoncetest.NewFaultTransport(nil, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{agentoncetest.LoseResponse}})
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		switch n {
		case 1:
			return chargeRequest("call_1")
		case 2:
			return chargeRequest("call_2")
		}
		return ai.NewModelTextMessage("Charged $49.")
	}}
	ag := newAgent(t, m, openHarness(t, journalPath(t)), s.URL, ft, false)

	if _, err := ag.generate(agentgenkit.WithSession(context.Background(), "conv-1", userTurn), ai.WithMessages(userTurn...)); err != nil {
		t.Fatal(err)
	}
	if ft.Injected(agentoncetest.LoseResponse) != 1 {
		t.Fatalf("lost answers = %d; want 1", ft.Injected(agentoncetest.LoseResponse))
	}
	if n, d := s.Downstream.TotalEffects(), s.Downstream.Duplicates(); n != 1 || d != 0 {
		t.Errorf("charges = %d, duplicates = %d; want 1, 0", n, d)
	}
	if got := m.toolOutputs(t, 2); got["call_1"] != ch1 {
		t.Errorf("the model read %v; want ch_1", got)
	}
	if got := m.toolOutputs(t, 3); got["call_2"] != ch1 {
		t.Errorf("asking again, the model read %v; want ch_1", got)
	}
}

// A call without a session is refused before anything runs, the model is
// told so, the Logger gets a warning, and the generation goes on.
func TestNoScopeIsRejected(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if !readTool(req) {
			return chargeRequest("call_1")
		}
		return ai.NewModelTextMessage("Sorry.")
	}}
	var log lockedBuffer
	h, err := agentonce.Open(context.Background(), journalPath(t), &agentonce.OpenOptions{Options: harness.Options{
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ag := newAgent(t, m, h, s.URL, nil, false)
	if _, err := ag.generate(context.Background(), ai.WithMessages(userTurn...)); err != nil {
		t.Fatal(err)
	}
	if n := s.Downstream.TotalEffects(); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
	if got := m.toolOutputs(t, 2)["call_1"]; !strings.Contains(got, "rejected and did not run") {
		t.Errorf("the model read %s; want a rejection", got)
	}
	if got := log.String(); strings.Count(got, "tool=charge_card") != 1 || !strings.Contains(got, harness.ErrNoTurn.Error()) {
		t.Errorf("log = %q; want one warning for charge_card naming %q", got, harness.ErrNoTurn)
	}
}

// lockedBuffer is a log a test reads while slog may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestUserTurn(t *testing.T) {
	history := []*ai.Message{
		ai.NewSystemTextMessage("You are a cashier."),
		ai.NewUserTextMessage("Charge me $49."),
		chargeRequest("call_1"),
		ai.NewMessage(ai.RoleTool, nil, ai.NewToolResponsePart(&ai.ToolResponse{Name: "charge_card", Ref: "call_1", Output: ch1})),
		ai.NewModelTextMessage("Charged."),
	}
	for _, c := range []struct {
		msgs []*ai.Message
		want string
	}{
		{nil, ""},
		{history[:1], ""},
		{history[:2], "1"},
		{history, "1"},
		{append(history, ai.NewUserMessage()), "1"},
		{append(history, ai.NewUserTextMessage("Refund it.")), "2"},
	} {
		if got := agentgenkit.UserTurn(c.msgs); got != c.want {
			t.Errorf("UserTurn(%d messages) = %q; want %q", len(c.msgs), got, c.want)
		}
	}
}
