package anthropic_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/adapters/anthropic/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// The model asks for the same charge twice in one response (parallel tool
// use that split one intent in two): one charge, two tool_result blocks
// with their own ids and the same text.
func TestParallelDuplicatesCollapse(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	api := fakeapi.New(func(req fakeapi.Request) []fakeapi.Block {
		if lastUserText(req) != "" {
			return []fakeapi.Block{
				fakeapi.ToolUse("toolu_1", "charge_card", `{"amount":4900,"currency":"usd"}`),
				fakeapi.ToolUse("toolu_2", "charge_card", `{"currency":"usd","amount":4900}`),
			}
		}
		return []fakeapi.Block{fakeapi.Text("Charged.")}
	})
	defer api.Close()
	a := anthropic.New(openHarness(t, journalPath(t), shop.ChargeTool()), &anthropic.Options{Tenant: "acme"})

	_, results, text := converse(t, newClient(api), a, "conv-1", nil, "Charge me $49.")

	if n := len(shop.Charges()); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if text != "Charged." {
		t.Errorf("final text = %q; want %q", text, "Charged.")
	}
	if len(results) != 2 || results[0].Source != harness.Executed || results[1].Source != harness.Collapsed {
		t.Fatalf("results = %v; want executed then collapsed", describe(results))
	}
	reqs := api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d; want 2", len(reqs))
	}
	got := reqs[1].Last()
	if got.Role != "user" || len(got.Content) != 2 {
		t.Fatalf("tool results message = %+v; want a user message with 2 blocks", got)
	}
	for i, id := range []string{"toolu_1", "toolu_2"} {
		b := got.Content[i]
		if b.Type != "tool_result" || b.ToolUseID != id || b.IsError {
			t.Errorf("block %d = {type %s, tool_use_id %s, is_error %v}; want {tool_result, %s, false}", i, b.Type, b.ToolUseID, b.IsError, id)
		}
	}
	if a, b := got.Content[0].ResultText(), got.Content[1].ResultText(); a != b || !strings.Contains(a, `"id":"ch_1"`) {
		t.Errorf("tool_result texts = %q, %q; want the same charge ch_1 twice", a, b)
	}
}

// The process restarts in the middle of a user turn and the model, asked
// again, repeats the charge: the new Harness on the same journal answers it
// from the journal, and the model sees the first answer again.
func TestRestartReplays(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	var id atomic.Int64
	api := fakeapi.New(func(req fakeapi.Request) []fakeapi.Block {
		// A model gives every retry a new tool_use id.
		return []fakeapi.Block{fakeapi.ToolUse("toolu_"+strconv.FormatInt(id.Add(1), 10), "charge_card", `{"amount":4900,"currency":"usd"}`)}
	})
	defer api.Close()
	client := newClient(api)
	path := journalPath(t)
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Charge me $49."))}

	h1 := openHarness(t, path, shop.ChargeTool())
	a1 := anthropic.New(h1, nil)
	first, r1 := a1.Run(context.Background(), "conv-1", history, ask(t, client, a1, history))
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}

	a2 := anthropic.New(openHarness(t, path, shop.ChargeTool()), nil)
	second, r2 := a2.Run(context.Background(), "conv-1", history, ask(t, client, a2, history))

	if n := len(shop.Charges()); n != 1 {
		t.Errorf("charges after restart = %d; want 1", n)
	}
	if len(r1) != 1 || r1[0].Source != harness.Executed {
		t.Fatalf("first run = %v; want executed", describe(r1))
	}
	if len(r2) != 1 || r2[0].Source != harness.Replayed || r2[0].Status != harness.Succeeded {
		t.Fatalf("run after restart = %v; want succeeded, replayed", describe(r2))
	}
	b1, b2 := first.OfUser.Content[0].OfToolResult, second.OfUser.Content[0].OfToolResult
	if b1.ToolUseID == b2.ToolUseID {
		t.Errorf("both tool_use ids are %q; the fake model should give each response a new one", b1.ToolUseID)
	}
	if b2.ToolUseID != r2[0].CallID {
		t.Errorf("tool_result id = %q; want the response's tool_use id %q", b2.ToolUseID, r2[0].CallID)
	}
	if t1, t2 := *b1.Content[0].GetText(), *b2.Content[0].GetText(); t1 != t2 {
		t.Errorf("replayed tool_result = %q; want the first answer %q", t2, t1)
	}
}

// Every status reaches the model as a tool_result; only a success is not
// an error, and the text says what the model may do.
func TestStatusToToolResult(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	var failedRuns, suppressedRuns, unknownRuns atomic.Int64
	h := openHarness(t, journalPath(t),
		shop.ChargeTool(),
		counted("declined", journal.Keyed, &failedRuns, retryclass.Permanent(errDeclined)),
		counted("refused", journal.Keyed, &suppressedRuns, retryclass.Suppress(errDeclined)),
		counted("lost", journal.Unkeyed, &unknownRuns, errDeclined),
	)
	tests := []struct {
		tool, input string
		status      harness.Status
		isError     bool
		text        string // a part of the tool_result's text
	}{
		{"charge_card", `{"amount":100,"currency":"usd"}`, harness.Succeeded, false, `"id":"ch_1"`},
		{"charge_card", `{"amount":0,"currency":"usd"}`, harness.Failed, true, "nothing was done"},
		{"declined", `{}`, harness.Failed, true, "nothing was done: card declined"},
		{"refused", `{}`, harness.Suppressed, true, "not"},
		{"lost", `{}`, harness.Unknown, true, "Do not retry"},
		{"no_such_tool", `{}`, harness.Rejected, true, "rejected"},
	}
	content := make([]fakeapi.Block, len(tests))
	for i, tt := range tests {
		content[i] = fakeapi.ToolUse("toolu_"+strconv.Itoa(i), tt.tool, tt.input)
	}
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block { return content })
	defer api.Close()
	a := anthropic.New(h, nil)
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("go"))}
	reply, results := a.Run(context.Background(), "conv-1", history, ask(t, newClient(api), a, history))

	blocks := reply.OfUser.Content
	if len(blocks) != len(tests) {
		t.Fatalf("tool_result blocks = %d; want %d", len(blocks), len(tests))
	}
	for i, tt := range tests {
		b := blocks[i].OfToolResult
		text := *b.Content[0].GetText()
		if results[i].Status != tt.status {
			t.Errorf("%s %s: status %v; want %v (%v)", tt.tool, tt.input, results[i].Status, tt.status, results[i].Err)
		}
		if b.ToolUseID != content[i].ID || b.IsError.Value != tt.isError {
			t.Errorf("%s %s: tool_result {id %s, is_error %v}; want {%s, %v}", tt.tool, tt.input, b.ToolUseID, b.IsError.Value, content[i].ID, tt.isError)
		}
		if !strings.Contains(text, tt.text) || text != results[i].ForModel() {
			t.Errorf("%s %s: tool_result text %q; want ForModel, containing %q", tt.tool, tt.input, text, tt.text)
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
}

// A conversation of two user turns, in which the model re-plans inside the
// first and repeats the charge: the repeat is replayed, the same charge in
// the second user turn is a new intent, and each turn ends in text.
func TestConversation(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	charge := `{"amount":4900,"currency":"usd"}`
	api := fakeapi.New(func(req fakeapi.Request) []fakeapi.Block {
		last := req.Last()
		if lastUserText(req) != "" {
			return []fakeapi.Block{fakeapi.ToolUse("toolu_c"+strconv.Itoa(len(req.Messages)), "charge_card", charge)}
		}
		// Tool results: after the first, the model re-plans and repeats
		// the charge beside a receipt; after that it answers.
		if len(last.Content) == 1 && last.Content[0].ToolUseID == "toolu_c1" {
			return []fakeapi.Block{
				fakeapi.Text("Let me make sure, and send a receipt."),
				fakeapi.ToolUse("toolu_r1", "charge_card", charge),
				fakeapi.ToolUse("toolu_m1", "send_receipt", `{"to":"ada@example.com"}`),
			}
		}
		return []fakeapi.Block{fakeapi.Text("Done: charged $49.")}
	})
	defer api.Close()
	client := newClient(api)
	a := anthropic.New(openHarness(t, journalPath(t), shop.ChargeTool(), shop.ReceiptTool()), nil)

	history, r1, text1 := converse(t, client, a, "conv-1", nil, "Charge me $49 and mail a receipt.")
	if n := len(shop.Charges()); n != 1 || len(shop.Emails()) != 1 {
		t.Errorf("after turn 1: charges %d, mails %d; want 1, 1", n, len(shop.Emails()))
	}
	wantSources := []harness.Source{harness.Executed, harness.Replayed, harness.Executed}
	if len(r1) != len(wantSources) {
		t.Fatalf("turn 1 results = %v; want %d", describe(r1), len(wantSources))
	}
	for i, r := range r1 {
		if r.Source != wantSources[i] || !r.OK() {
			t.Errorf("turn 1 result %d (%s) = %v, %v; want succeeded, %v", i, r.CallID, r.Status, r.Source, wantSources[i])
		}
	}
	if text1 != "Done: charged $49." {
		t.Errorf("turn 1 ends with %q", text1)
	}
	if got := anthropic.UserTurn(history); got != "1" {
		t.Errorf("UserTurn after turn 1 = %q; want 1", got)
	}

	history, r2, text2 := converse(t, client, a, "conv-1", history, "Charge me $49 again, please.")
	if n := len(shop.Charges()); n != 2 {
		t.Errorf("after turn 2: charges %d; want 2 (a new user turn is a new intent)", n)
	}
	if len(r2) == 0 || r2[0].Source != harness.Executed {
		t.Errorf("turn 2 first result = %v; want executed", describe(r2))
	}
	if text2 == "" {
		t.Errorf("turn 2 ended without text")
	}
	if got := anthropic.UserTurn(history); got != "2" {
		t.Errorf("UserTurn after turn 2 = %q; want 2", got)
	}
}

// A conversation without an id cannot be keyed: every call is rejected,
// and nothing runs.
func TestNoSessionRejected(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	a := anthropic.New(openHarness(t, journalPath(t), shop.ChargeTool()), nil)
	msg := &sdk.Message{}
	if err := json.Unmarshal([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"charge_card","input":{"amount":1,"currency":"usd"}}],"stop_reason":"tool_use"}`), msg); err != nil {
		t.Fatal(err)
	}
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("go"))}
	for _, tc := range []struct {
		session string
		history []sdk.MessageParam
	}{{"", history}, {"conv-1", nil}} {
		reply, results := a.Run(context.Background(), tc.session, tc.history, msg)
		if len(results) != 1 || results[0].Status != harness.Rejected {
			t.Fatalf("Run(session %q, %d messages) = %v; want rejected", tc.session, len(tc.history), describe(results))
		}
		if b := reply.OfUser.Content[0].OfToolResult; !b.IsError.Value || b.ToolUseID != "toolu_1" {
			t.Errorf("Run(session %q): tool_result {id %s, is_error %v}; want {toolu_1, true}", tc.session, b.ToolUseID, b.IsError.Value)
		}
	}
	if n := len(shop.Charges()); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
}

func TestUserTurn(t *testing.T) {
	user := sdk.NewUserMessage(sdk.NewTextBlock("hi"))
	results := sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_1", "ok", false))
	mixed := sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_1", "ok", false), sdk.NewTextBlock("and also"))
	assistant := sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_1", map[string]any{}, "t"))
	raw := param.Override[sdk.MessageParam](json.RawMessage(`{"role":"user","content":"hi"}`))
	rawResults := param.Override[sdk.MessageParam](json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`))
	rawModel := param.Override[sdk.MessageParam](json.RawMessage(`{"role":"assistant","content":"done"}`))
	tests := []struct {
		name    string
		history []sdk.MessageParam
		want    string
	}{
		{"empty", nil, ""},
		{"only the model", []sdk.MessageParam{assistant}, ""},
		{"first user message", []sdk.MessageParam{user}, "1"},
		{"tool round-trips", []sdk.MessageParam{user, assistant, results, assistant, results}, "1"},
		{"second user message", []sdk.MessageParam{user, assistant, results, sdk.NewAssistantMessage(sdk.NewTextBlock("done")), user}, "2"},
		{"results with user text", []sdk.MessageParam{user, assistant, mixed}, "2"},
		{"an empty user message", []sdk.MessageParam{user, assistant, results, sdk.NewUserMessage()}, "1"},
		{"raw JSON messages", []sdk.MessageParam{raw, assistant, rawResults, rawModel, raw}, "2"},
	}
	for _, tt := range tests {
		if got := anthropic.UserTurn(tt.history); got != tt.want {
			t.Errorf("UserTurn(%s) = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// The tools the model is given are the registered ones, sorted, with
// their descriptions and schemas; a tool without a schema gets an empty
// object schema.
func TestToolDefinitions(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	var runs atomic.Int64
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block { return []fakeapi.Block{fakeapi.Text("hi")} })
	defer api.Close()
	a := anthropic.New(openHarness(t, journalPath(t), counted("zz_plain", journal.Keyed, &runs, nil), shop.ChargeTool()), nil)
	ask(t, newClient(api), a, []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))})

	got := api.Requests()[0].Tools
	want := []fakeapi.Tool{
		{Name: "charge_card", Description: "Charges the customer's card.", InputSchema: json.RawMessage(fakeshop.ChargeSchema)},
		{Name: "zz_plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("tools = %+v; want %d", got, len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Description != want[i].Description || !sameJSON(got[i].InputSchema, want[i].InputSchema) {
			t.Errorf("tool %d = {%s, %q, %s}; want {%s, %q, %s}", i, got[i].Name, got[i].Description, got[i].InputSchema,
				want[i].Name, want[i].Description, want[i].InputSchema)
		}
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

// The caller leaves while the tool is still running: the model is told,
// as an error, that the action is under way and must not be retried or
// altered; the same call afterwards gets the outcome, and the tool ran
// once.
func TestInProgress(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	slow := harness.Tool{
		Name:   "slow_transfer",
		Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			close(started)
			<-release
			return json.RawMessage(`{"transfer":"tr_1"}`), nil
		},
	}
	a := anthropic.New(openHarness(t, journalPath(t), slow), nil)
	var msg sdk.Message
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"slow_transfer","input":{"amount":1}}]}`), &msg); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	reply, results := a.RunTurn(ctx, "conv-1", "1", &msg)
	b := reply.OfUser.Content[0].OfToolResult
	if results[0].Status != harness.InProgress || !b.IsError.Value || !strings.Contains(*b.Content[0].GetText(), "under way") {
		t.Errorf("while running: %s, is_error %v, %q; want in-progress, an error saying it is under way", describe(results), b.IsError.Value, *b.Content[0].GetText())
	}

	close(release)
	// The re-issue joins the flight if it is still running, or is
	// answered from the journal.
	reply, results = a.RunTurn(context.Background(), "conv-1", "1", &msg)
	b = reply.OfUser.Content[0].OfToolResult
	if !results[0].OK() || b.IsError.Value || *b.Content[0].GetText() != `{"transfer":"tr_1"}` {
		t.Errorf("afterwards: %s, is_error %v, %q; want succeeded with the transfer", describe(results), b.IsError.Value, *b.Content[0].GetText())
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}
}
