package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

const charge49 = `{"amount":4900,"currency":"usd"}`

// The model asks for the same charge twice in one answer (parallel tool
// calls that split one intent in two): one charge, and a result for each
// call id with the same text.
func TestParallelDuplicatesCollapse(t *testing.T) {
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			shop := fakeshop.NewShop()
			defer shop.Close()
			api := fakeapi.New(func(conv []fakeapi.Msg) fakeapi.Reply {
				if userSpoke(conv) {
					return fakeapi.Reply{Calls: []fakeapi.Call{
						{ID: "call_1", Name: "charge_card", Arguments: charge49},
						{ID: "call_2", Name: "charge_card", Arguments: `{"currency":"usd","amount":4900}`},
					}}
				}
				return fakeapi.Reply{Text: "Charged."}
			})
			defer api.Close()
			a := openai.New(openHarness(t, journalPath(t), shop.ChargeTool()), &openai.Options{Tenant: "acme"})

			results, text := converse(t, dr.new(newClient(api), "conv-1"), a, "Charge me $49.")

			if n := len(shop.Charges()); n != 1 {
				t.Errorf("charges = %d; want 1", n)
			}
			if text != "Charged." {
				t.Errorf("final text = %q; want %q", text, "Charged.")
			}
			if len(results) != 2 || results[0].Source != harness.Executed || results[1].Source != harness.Collapsed {
				t.Fatalf("results = %s; want executed then collapsed", describe(results))
			}
			reqs := api.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model requests = %d; want 2", len(reqs))
			}
			conv := reqs[1].Conv
			got := conv[len(conv)-2:]
			for i, id := range []string{"call_1", "call_2"} {
				if got[i].Role != "tool" || got[i].CallID != id || !strings.Contains(got[i].Text, `"id":"ch_1"`) {
					t.Errorf("tool message %d = %+v; want call %s answered with charge ch_1", i, got[i], id)
				}
			}
		})
	}
}

// The process restarts in the middle of a user turn, before the results
// reach the model, and the model, asked again, repeats the charge with a
// new call id: the new Harness on the same journal answers it from the
// journal with the first answer's text.
func TestRestartReplays(t *testing.T) {
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			shop := fakeshop.NewShop()
			defer shop.Close()
			var id atomic.Int64
			api := fakeapi.New(func(conv []fakeapi.Msg) fakeapi.Reply {
				if !userSpoke(conv) {
					return fakeapi.Reply{Text: "Charged."}
				}
				// A model gives every retry a new call id.
				return fakeapi.Reply{Calls: []fakeapi.Call{{ID: "call_" + strconv.FormatInt(id.Add(1), 10), Name: "charge_card", Arguments: charge49}}}
			})
			defer api.Close()
			path := journalPath(t)
			d := dr.new(newClient(api), "conv-1")
			d.say("Charge me $49.")

			h1 := openHarness(t, path, shop.ChargeTool())
			r1, _ := d.step(t, openai.New(h1, nil), false)
			if err := h1.Close(); err != nil {
				t.Fatal(err)
			}
			r2, _ := d.step(t, openai.New(openHarness(t, path, shop.ChargeTool()), nil), true)

			if n := len(shop.Charges()); n != 1 {
				t.Errorf("charges after restart = %d; want 1", n)
			}
			if len(r1) != 1 || r1[0].Source != harness.Executed {
				t.Fatalf("first run = %s; want executed", describe(r1))
			}
			if len(r2) != 1 || r2[0].Source != harness.Replayed || r2[0].Status != harness.Succeeded || r2[0].CallID != "call_2" {
				t.Fatalf("run after restart = %s; want call_2 succeeded, replayed", describe(r2))
			}
			if r1[0].ForModel() != r2[0].ForModel() {
				t.Errorf("replayed text = %q; want the first answer %q", r2[0].ForModel(), r1[0].ForModel())
			}
		})
	}
}

var errDeclined = errors.New("card declined")

// Every status reaches the model as a tool result with its call id; with
// no error flag in either API, the text says what happened and what the
// model may do.
func TestStatusToToolResult(t *testing.T) {
	tests := []struct {
		tool, input string
		status      harness.Status
		text        string // a part of the result's text
	}{
		{"charge_card", `{"amount":100,"currency":"usd"}`, harness.Succeeded, `"id":"ch_1"`},
		{"charge_card", `{"amount":0,"currency":"usd"}`, harness.Failed, "nothing was done"},
		{"declined", `{}`, harness.Failed, "nothing was done: card declined"},
		{"refused", `{}`, harness.Suppressed, "not"},
		{"lost", `{}`, harness.Unknown, "Do not retry"},
		{"no_such_tool", `{}`, harness.Rejected, "rejected"},
		{"charge_card", `{"amount":`, harness.Rejected, "rejected"},
	}
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			shop := fakeshop.NewShop()
			defer shop.Close()
			var failedRuns, suppressedRuns, unknownRuns atomic.Int64
			h := openHarness(t, journalPath(t),
				shop.ChargeTool(),
				counted("declined", journal.Keyed, &failedRuns, retryclass.Permanent(errDeclined)),
				counted("refused", journal.Keyed, &suppressedRuns, retryclass.Suppress(errDeclined)),
				counted("lost", journal.Unkeyed, &unknownRuns, errDeclined),
			)
			calls := make([]fakeapi.Call, len(tests))
			for i, tt := range tests {
				calls[i] = fakeapi.Call{ID: "call_" + strconv.Itoa(i), Name: tt.tool, Arguments: tt.input}
			}
			api := fakeapi.New(func(conv []fakeapi.Msg) fakeapi.Reply {
				if userSpoke(conv) {
					return fakeapi.Reply{Calls: calls}
				}
				return fakeapi.Reply{Text: "Some of that did not work."}
			})
			defer api.Close()
			results, _ := converse(t, dr.new(newClient(api), "conv-1"), openai.New(h, nil), "go")

			if len(results) != len(tests) {
				t.Fatalf("results = %s; want %d", describe(results), len(tests))
			}
			conv := api.Requests()[1].Conv
			sent := conv[len(conv)-len(tests):]
			for i, tt := range tests {
				if results[i].Status != tt.status {
					t.Errorf("%s %s: status %v; want %v (%v)", tt.tool, tt.input, results[i].Status, tt.status, results[i].Err)
				}
				if m := sent[i]; m.Role != "tool" || m.CallID != calls[i].ID || m.Text != results[i].ForModel() || !strings.Contains(m.Text, tt.text) {
					t.Errorf("%s %s: sent %+v; want a tool result for %s with ForModel's text, containing %q", tt.tool, tt.input, m, calls[i].ID, tt.text)
				}
			}
			if n := len(shop.Charges()); n != 1 {
				t.Errorf("charges = %d; want 1 (the invalid amount is refused)", n)
			}
			for name, runs := range map[string]*atomic.Int64{"declined": &failedRuns, "refused": &suppressedRuns, "lost": &unknownRuns} {
				if n := runs.Load(); n != 1 {
					t.Errorf("%s ran %d times; want 1 (no retry of a definite or unknown outcome)", name, n)
				}
			}
		})
	}
}

// A conversation of two user turns, in which the model re-plans inside the
// first and repeats the charge: the repeat is replayed, the same charge in
// the second user turn is a new intent, and each turn ends in text.
func TestConversation(t *testing.T) {
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			shop := fakeshop.NewShop()
			defer shop.Close()
			api := fakeapi.New(func(conv []fakeapi.Msg) fakeapi.Reply {
				last := fakeapi.Last(conv)
				switch {
				case userSpoke(conv):
					return fakeapi.Reply{Calls: []fakeapi.Call{{ID: "call_c" + strconv.Itoa(len(conv)), Name: "charge_card", Arguments: charge49}}}
				case last.CallID == "call_c1":
					// After the first charge, the model re-plans: it
					// repeats the charge beside a receipt.
					return fakeapi.Reply{Text: "Let me make sure, and send a receipt.", Calls: []fakeapi.Call{
						{ID: "call_r1", Name: "charge_card", Arguments: charge49},
						{ID: "call_m1", Name: "send_receipt", Arguments: `{"to":"ada@example.com"}`},
					}}
				}
				return fakeapi.Reply{Text: "Done: charged $49."}
			})
			defer api.Close()
			a := openai.New(openHarness(t, journalPath(t), shop.ChargeTool(), shop.ReceiptTool()), nil)
			d := dr.new(newClient(api), "conv-1")

			r1, text1 := converse(t, d, a, "Charge me $49 and mail a receipt.")
			if n, m := len(shop.Charges()), len(shop.Emails()); n != 1 || m != 1 {
				t.Errorf("after turn 1: charges %d, mails %d; want 1, 1", n, m)
			}
			wantSources := []harness.Source{harness.Executed, harness.Replayed, harness.Executed}
			if len(r1) != len(wantSources) {
				t.Fatalf("turn 1 results = %s; want %d", describe(r1), len(wantSources))
			}
			for i, r := range r1 {
				if r.Source != wantSources[i] || !r.OK() {
					t.Errorf("turn 1 result %d (%s) = %v, %v; want succeeded, %v", i, r.CallID, r.Status, r.Source, wantSources[i])
				}
			}
			if text1 != "Done: charged $49." {
				t.Errorf("turn 1 ends with %q", text1)
			}

			r2, text2 := converse(t, d, a, "Charge me $49 again, please.")
			if n := len(shop.Charges()); n != 2 {
				t.Errorf("after turn 2: charges %d; want 2 (a new user turn is a new intent)", n)
			}
			if len(r2) == 0 || r2[0].Source != harness.Executed {
				t.Errorf("turn 2 first result = %s; want executed", describe(r2))
			}
			if text2 == "" {
				t.Errorf("turn 2 ended without text")
			}
			if n := shop.Duplicates(); n != 0 {
				t.Errorf("duplicate side effects = %d; want 0", n)
			}
		})
	}
}

// A conversation without an id cannot be keyed: every call is rejected,
// answered with its id, and nothing runs.
func TestNoSessionRejected(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	a := openai.New(openHarness(t, journalPath(t), shop.ChargeTool()), nil)

	var msg sdk.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"charge_card","arguments":"{\"amount\":1,\"currency\":\"usd\"}"}}]}`), &msg); err != nil {
		t.Fatal(err)
	}
	var resp responses.Response
	if err := json.Unmarshal([]byte(`{"id":"resp_1","object":"response","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"charge_card","arguments":"{\"amount\":1,\"currency\":\"usd\"}","status":"completed"}]}`), &resp); err != nil {
		t.Fatal(err)
	}
	user := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("go")}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("go", responses.EasyInputMessageRoleUser)}
	// Each case runs the response and returns the call id it answered.
	tests := []struct {
		name string
		run  func() (string, []harness.Result)
	}{
		{"chat, no session", func() (string, []harness.Result) {
			out, rs := a.RunChat(context.Background(), "", user, msg)
			return out[0].OfTool.ToolCallID, rs
		}},
		{"chat, no user message", func() (string, []harness.Result) {
			out, rs := a.RunChat(context.Background(), "conv-1", nil, msg)
			return out[0].OfTool.ToolCallID, rs
		}},
		{"responses, no session", func() (string, []harness.Result) {
			out, rs := a.RunResponse(context.Background(), "", input, &resp)
			return out[0].OfFunctionCallOutput.CallID.Value, rs
		}},
		{"responses, no user message", func() (string, []harness.Result) {
			out, rs := a.RunResponse(context.Background(), "conv-1", nil, &resp)
			return out[0].OfFunctionCallOutput.CallID.Value, rs
		}},
	}
	for _, tt := range tests {
		id, results := tt.run()
		if len(results) != 1 || results[0].Status != harness.Rejected || !errors.Is(results[0].Err, harness.ErrNoTurn) {
			t.Errorf("%s: results %s; want rejected, ErrNoTurn", tt.name, describe(results))
		}
		if id != "call_1" {
			t.Errorf("%s: answered call %q; want call_1", tt.name, id)
		}
	}
	if n := len(shop.Charges()); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
}

func TestChatUserTurn(t *testing.T) {
	user := sdk.UserMessage("hi")
	sys := sdk.SystemMessage("be brief")
	tool := sdk.ToolMessage("ok", "call_1")
	assistant := sdk.AssistantMessage("done")
	raw := param.Override[sdk.ChatCompletionMessageParamUnion](json.RawMessage(`{"role":"user","content":"hi"}`))
	rawTool := param.Override[sdk.ChatCompletionMessageParamUnion](json.RawMessage(`{"role":"tool","tool_call_id":"call_1","content":"ok"}`))
	tests := []struct {
		name    string
		history []sdk.ChatCompletionMessageParamUnion
		want    string
	}{
		{"empty", nil, ""},
		{"only the system prompt", []sdk.ChatCompletionMessageParamUnion{sys}, ""},
		{"first user message", []sdk.ChatCompletionMessageParamUnion{sys, user}, "1"},
		{"tool round-trips", []sdk.ChatCompletionMessageParamUnion{sys, user, assistant, tool, assistant, tool}, "1"},
		{"second user message", []sdk.ChatCompletionMessageParamUnion{user, assistant, tool, assistant, user}, "2"},
		{"raw JSON messages", []sdk.ChatCompletionMessageParamUnion{raw, assistant, rawTool, assistant, raw}, "2"},
	}
	for _, tt := range tests {
		if got := openai.ChatUserTurn(tt.history); got != tt.want {
			t.Errorf("ChatUserTurn(%s) = %q; want %q", tt.name, got, tt.want)
		}
	}
}

func TestResponseUserTurn(t *testing.T) {
	user := responses.ResponseInputItemParamOfMessage("hi", responses.EasyInputMessageRoleUser)
	dev := responses.ResponseInputItemParamOfMessage("be brief", responses.EasyInputMessageRoleDeveloper)
	assistant := responses.ResponseInputItemParamOfMessage("done", responses.EasyInputMessageRoleAssistant)
	call := responses.ResponseInputItemParamOfFunctionCall(`{}`, "call_1", "t")
	output := responses.ResponseInputItemParamOfFunctionCallOutput("ok")
	raw := param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(`{"type":"message","role":"user","content":"hi"}`))
	rawCall := param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(`{"type":"function_call","call_id":"call_1","name":"t","arguments":"{}"}`))
	rawModel := param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`))
	tests := []struct {
		name  string
		input responses.ResponseInputParam
		want  string
	}{
		{"empty", nil, ""},
		{"only the developer", responses.ResponseInputParam{dev}, ""},
		{"first user message", responses.ResponseInputParam{dev, user}, "1"},
		{"tool round-trips", responses.ResponseInputParam{user, call, output, call, output}, "1"},
		{"second user message", responses.ResponseInputParam{user, call, output, assistant, user}, "2"},
		{"raw JSON items", responses.ResponseInputParam{raw, rawCall, output, rawModel, raw}, "2"},
	}
	for _, tt := range tests {
		if got := openai.ResponseUserTurn(tt.input); got != tt.want {
			t.Errorf("ResponseUserTurn(%s) = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// The tools the model is given are the registered ones, sorted, with
// their descriptions and schemas; a tool without a schema gets an empty
// object schema.
func TestToolDefinitions(t *testing.T) {
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			shop := fakeshop.NewShop()
			defer shop.Close()
			var runs atomic.Int64
			api := fakeapi.New(func([]fakeapi.Msg) fakeapi.Reply { return fakeapi.Reply{Text: "hi"} })
			defer api.Close()
			a := openai.New(openHarness(t, journalPath(t), counted("zz_plain", journal.Keyed, &runs, nil), shop.ChargeTool()), nil)
			converse(t, dr.new(newClient(api), "conv-1"), a, "hi")

			got := api.Requests()[0].Tools
			want := []fakeapi.Tool{
				{Name: "charge_card", Description: "Charges the customer's card.", Parameters: json.RawMessage(fakeshop.ChargeSchema)},
				{Name: "zz_plain", Parameters: json.RawMessage(`{"type":"object"}`)},
			}
			if len(got) != len(want) {
				t.Fatalf("tools = %+v; want %d", got, len(want))
			}
			for i := range want {
				if got[i].Name != want[i].Name || got[i].Description != want[i].Description || !sameJSON(got[i].Parameters, want[i].Parameters) {
					t.Errorf("tool %d = {%s, %q, %s}; want {%s, %q, %s}", i, got[i].Name, got[i].Description, got[i].Parameters,
						want[i].Name, want[i].Description, want[i].Parameters)
				}
			}
		})
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// The caller leaves while the tool is still running: the model is told
// that the action is under way and must not be retried or altered; the
// same call afterwards gets the outcome, and the tool ran once.
func TestInProgress(t *testing.T) {
	var msg sdk.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"slow_transfer","arguments":"{\"amount\":1}"}}]}`), &msg); err != nil {
		t.Fatal(err)
	}
	var resp responses.Response
	if err := json.Unmarshal([]byte(`{"id":"resp_1","object":"response","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"slow_transfer","arguments":"{\"amount\":1}","status":"completed"}]}`), &resp); err != nil {
		t.Fatal(err)
	}
	// Each run returns the text sent back for call_1.
	runs := map[string]func(ctx context.Context, a *openai.Adapter) (string, []harness.Result){
		"chat": func(ctx context.Context, a *openai.Adapter) (string, []harness.Result) {
			out, rs := a.RunChatTurn(ctx, "conv-1", "1", msg)
			return out[0].OfTool.Content.OfString.Value, rs
		},
		"responses": func(ctx context.Context, a *openai.Adapter) (string, []harness.Result) {
			out, rs := a.RunResponseTurn(ctx, "conv-1", "1", &resp)
			return out[0].OfFunctionCallOutput.Output.OfString.Value, rs
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			var n atomic.Int64
			slow := harness.Tool{
				Name:   "slow_transfer",
				Effect: journal.Keyed,
				Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					n.Add(1)
					close(started)
					<-release
					return json.RawMessage(`{"transfer":"tr_1"}`), nil
				},
			}
			a := openai.New(openHarness(t, journalPath(t), slow), nil)

			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			text, results := run(ctx, a)
			if results[0].Status != harness.InProgress || !strings.Contains(text, "under way") {
				t.Errorf("while running: %s, %q; want in-progress, saying it is under way", describe(results), text)
			}

			close(release)
			// The re-issue joins the flight if it is still running, or is
			// answered from the journal.
			text, results = run(context.Background(), a)
			if !results[0].OK() || text != `{"transfer":"tr_1"}` {
				t.Errorf("afterwards: %s, %q; want succeeded with the transfer", describe(results), text)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("the tool ran %d times; want 1", got)
			}
		})
	}
}
