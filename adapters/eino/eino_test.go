package eino_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/agentoncetest"
)

// The model asks for the same charge twice in one response (parallel tool
// calls that split one intent in two), and eino's ToolsNode runs both at
// once: one charge, and the model reads it under both call ids.
func TestParallelDuplicate(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(
				callCharge("call_1", `{"amount":4900,"currency":"usd"}`),
				callCharge("call_2", `{"currency":"usd", "amount":4900}`))
		}
		return schema.AssistantMessage("Charged $49.", nil)
	}}
	a := eino.New(openHarness(t, journalPath(t)), keyed)
	agent := newAgent(t, m, a, chargeTool(t, s.URL, nil))

	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	out, err := agent.Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "Charged $49." {
		t.Errorf("answer = %q; want %q", out.Content, "Charged $49.")
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	got := toolResults(m.input(t, 2))
	if len(got) != 2 {
		t.Fatalf("the model read %d tool results; want 2", len(got))
	}
	for i, id := range []string{"call_1", "call_2"} {
		if got[i].ToolCallID != id || got[i].Content != `{"id":"ch_1","amount":4900}` {
			t.Errorf("tool result %d = {%s, %q}; want {%s, the one charge ch_1}", i, got[i].ToolCallID, got[i].Content, id)
		}
	}
}

// The shop's answer to the charge is lost after it charged: the harness
// sends the charge again with the same Idempotency-Key and the shop
// replays its answer. The model, unsure, asks again in the same turn and
// is answered from the journal. One charge; the model reads it twice.
func TestRetryAfterLostAnswer(t *testing.T) {
	s := newShop(t)
	ft := agentoncetest.NewFaultTransport(nil, &agentoncetest.FaultOptions{Script: []agentoncetest.Fault{agentoncetest.LoseResponse}})
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		switch n {
		case 1:
			return toolCalls(callCharge("call_1", `{"amount":4900,"currency":"usd"}`))
		case 2:
			return toolCalls(callCharge("call_2", `{"amount":4900,"currency":"usd"}`))
		}
		return schema.AssistantMessage("Charged $49.", nil)
	}}
	a := eino.New(openHarness(t, journalPath(t)), keyed)
	agent := newAgent(t, m, a, chargeTool(t, s.URL, ft))

	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	if _, err := agent.Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs); err != nil {
		t.Fatal(err)
	}
	if ft.Injected(agentoncetest.LoseResponse) != 1 {
		t.Fatalf("lost answers = %d; want 1", ft.Injected(agentoncetest.LoseResponse))
	}
	if n, d := s.Downstream.TotalEffects(), s.Downstream.Duplicates(); n != 1 || d != 0 {
		t.Errorf("charges = %d, duplicates = %d; want 1, 0", n, d)
	}
	for _, n := range []int{2, 3} {
		got := toolResults(m.input(t, n))
		if len(got) != 1 || got[0].Content != `{"id":"ch_1","amount":4900}` {
			t.Errorf("model input %d ends in %v; want the one charge ch_1", n, contents(got))
		}
	}
}

// A tool call without a session is refused before anything runs, and the
// model is told so.
func TestNoScopeIsRejected(t *testing.T) {
	s := newShop(t)
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(callCharge("call_1", `{"amount":4900,"currency":"usd"}`))
		}
		return schema.AssistantMessage("Sorry.", nil)
	}}
	agent := newAgent(t, m, eino.New(openHarness(t, journalPath(t)), keyed), chargeTool(t, s.URL, nil))
	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	if _, err := agent.Generate(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if n := s.Downstream.TotalEffects(); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
	got := toolResults(m.input(t, 2))
	if len(got) != 1 || !strings.Contains(got[0].Content, "rejected and did not run") {
		t.Errorf("the model read %v; want a rejection", contents(got))
	}
}

func TestUserTurn(t *testing.T) {
	history := []*schema.Message{
		schema.SystemMessage("You are a cashier."),
		schema.UserMessage("Charge me $49."),
		toolCalls(callCharge("call_1", `{}`)),
		schema.ToolMessage(`{"id":"ch_1"}`, "call_1"),
		schema.AssistantMessage("Charged.", nil),
	}
	for _, c := range []struct {
		msgs []*schema.Message
		want string
	}{
		{nil, ""},
		{history[:1], ""},
		{history[:2], "1"},
		{history, "1"},
		{append(history, schema.UserMessage("")), "1"},
		{append(history, schema.UserMessage("Refund it.")), "2"},
	} {
		if got := eino.UserTurn(c.msgs); got != c.want {
			t.Errorf("UserTurn(%d messages) = %q; want %q", len(c.msgs), got, c.want)
		}
	}
}

func contents(msgs []*schema.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// A streamable tool goes through the middleware too: its stream is read
// whole and recorded, and the model asking twice in parallel gets the
// one stream's text under both call ids.
func TestStreamableTool(t *testing.T) {
	var runs atomic.Int64
	st, err := utils.InferStreamTool("count_to", "Counts aloud.", func(ctx context.Context, in struct{ N int }) (*schema.StreamReader[string], error) {
		runs.Add(1)
		parts := make([]string, in.N)
		for i := range parts {
			parts[i] = strconv.Itoa(i+1) + " "
		}
		return schema.StreamReaderFromArray(parts), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) schema.ToolCall {
		return schema.ToolCall{ID: id, Function: schema.FunctionCall{Name: "count_to", Arguments: `{"N":3}`}}
	}
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(call("call_1"), call("call_2"))
		}
		return schema.AssistantMessage("Done.", nil)
	}}
	agent := newAgent(t, m, eino.New(openHarness(t, journalPath(t)), nil), st)
	msgs := []*schema.Message{schema.UserMessage("Count to 3.")}
	if _, err := agent.Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("tool runs = %d; want 1", n)
	}
	got := toolResults(m.input(t, 2))
	if len(got) != 2 || got[0].Content != "1 2 3 " || got[1].Content != "1 2 3 " {
		t.Errorf("the model read %q; want the stream's text twice", contents(got))
	}
}

// An enhanced (multimodal) tool goes through the middleware too: its
// result is recorded as it is, and the model asking twice in parallel
// reads the one result twice.
func TestEnhancedTool(t *testing.T) {
	var runs atomic.Int64
	et, err := utils.InferEnhancedTool("draw_chart", "Draws a chart.", func(ctx context.Context, in struct{ Title string }) (*schema.ToolResult, error) {
		n := runs.Add(1)
		return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: in.Title + " #" + strconv.FormatInt(n, 10)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) schema.ToolCall {
		return schema.ToolCall{ID: id, Function: schema.FunctionCall{Name: "draw_chart", Arguments: `{"Title":"sales"}`}}
	}
	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(call("call_1"), call("call_2"))
		}
		return schema.AssistantMessage("Done.", nil)
	}}
	agent := newAgent(t, m, eino.New(openHarness(t, journalPath(t)), nil), et)
	msgs := []*schema.Message{schema.UserMessage("Chart the sales.")}
	if _, err := agent.Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("tool runs = %d; want 1", n)
	}
	got := toolResults(m.input(t, 2))
	if len(got) != 2 {
		t.Fatalf("the model read %d tool results; want 2", len(got))
	}
	for i, msg := range got {
		if len(msg.UserInputMultiContent) != 1 || msg.UserInputMultiContent[0].Text != "sales #1" {
			t.Errorf("tool result %d = %+v; want the one chart, sales #1", i, msg)
		}
	}
}
