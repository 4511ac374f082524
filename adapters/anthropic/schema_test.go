package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/adapters/anthropic/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// receipt is the input of the Typed tool of these tests.
type receipt struct {
	To    string `json:"to" jsonschema:"the customer's email address"`
	Order string `json:"order" jsonschema:"the order number"`
	Note  string `json:"note,omitempty"`
}

// receiptSchema is the schema derived from receipt: json names, jsonschema
// descriptions, the fields without omitempty required, no other property.
const receiptSchema = `{"type":"object","properties":{
	"to":{"type":"string","description":"the customer's email address"},
	"order":{"type":"string","description":"the order number"},
	"note":{"type":"string"}},
	"required":["to","order"],"additionalProperties":false}`

// mailer is a Typed tool that counts its mails (its side effects) in sent.
func mailer(name, description string, sent *atomic.Int64) harness.Tool {
	t := harness.Typed(name, journal.Keyed, func(ctx context.Context, in receipt) (string, error) {
		sent.Add(1)
		return "mailed to " + in.To, nil
	})
	t.Description = description
	return t
}

// warnings returns a logger that writes to buf.
func warnings(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// A Typed tool reaches the model with the schema of its Go input type and
// its description, and a tool with a Schema of its own keeps it.
func TestTypedToolSchema(t *testing.T) {
	var sent atomic.Int64
	var log bytes.Buffer
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block { return []fakeapi.Block{fakeapi.Text("hi")} })
	defer api.Close()
	own := mailer("own_schema", "Mails with a schema of its own.", &sent)
	own.Schema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`)
	h := openHarness(t, journalPath(t), mailer("send_receipt", "Mails the receipt of an order.", &sent), own)
	a := anthropic.New(h, &anthropic.Options{Logger: warnings(&log)})
	ask(t, newClient(api), a, []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))})

	got := api.Requests()[0].Tools
	want := []fakeapi.Tool{
		{Name: "own_schema", Description: "Mails with a schema of its own.", InputSchema: own.Schema},
		{Name: "send_receipt", Description: "Mails the receipt of an order.", InputSchema: json.RawMessage(receiptSchema)},
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
	if log.Len() != 0 {
		t.Errorf("warnings for tools with a schema and a description:\n%s", log.String())
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("mails after listing the tools = %d; want 0", n)
	}
}

// A tool the model would get no schema or no description for is warned
// about once, by name, however often the tools are listed; a Go type with
// no JSON Schema (a channel) is one, and still offered as an object.
func TestToolWarnings(t *testing.T) {
	var sent, runs atomic.Int64
	var log bytes.Buffer
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block { return []fakeapi.Block{fakeapi.Text("hi")} })
	defer api.Close()
	unschemable := harness.Typed("watch", journal.Keyed, func(ctx context.Context, in struct{ C chan int }) (string, error) {
		return "", nil
	})
	unschemable.Description = "Watches a channel."
	h := openHarness(t, journalPath(t),
		counted("plain", journal.Keyed, &runs, nil),
		mailer("undescribed", "", &sent),
		mailer("send_receipt", "Mails the receipt of an order.", &sent),
		unschemable)
	a := anthropic.New(h, &anthropic.Options{Logger: warnings(&log)})
	client := newClient(api)
	for range 2 {
		ask(t, client, a, []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))})
	}

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	want := [][]string{
		{"no input schema for a tool", "tool=plain"},
		{"no description of a tool", "tool=plain"},
		{"no description of a tool", "tool=undescribed"},
		{"no input schema for a tool", "tool=watch", "chan int"},
	}
	if len(lines) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d (plain's schema and description, undescribed's description, watch's schema), once each", log.String(), len(want))
	}
	for i, w := range want {
		for _, s := range w {
			if !strings.Contains(lines[i], s) {
				t.Errorf("warning %d = %s; want it to hold %q", i, lines[i], s)
			}
		}
	}
	for _, tool := range api.Requests()[1].Tools {
		if tool.Name != "send_receipt" && tool.Name != "undescribed" && !sameJSON(tool.InputSchema, json.RawMessage(`{"type":"object"}`)) {
			t.Errorf("tool %s input_schema = %s; want {\"type\":\"object\"}", tool.Name, tool.InputSchema)
		}
	}
}

// The key of a Typed tool's call does not depend on the derived schema: a
// call run before any listing (nothing derived) and the same call after a
// restart whose adapter derived and offered the schema are one intent,
// answered from the journal, with one mail. The input's null "note" would
// be dropped before keying were the derived schema the tool's Schema.
func TestDerivedSchemaKeepsKey(t *testing.T) {
	var sent atomic.Int64
	const input = `{"to":"ada@example.com","order":"1001","note":null}`
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block {
		return []fakeapi.Block{fakeapi.ToolUse("toolu_1", "send_receipt", input)}
	})
	defer api.Close()
	client := newClient(api)
	path := journalPath(t)
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Mail me the receipt."))}

	h1 := openHarness(t, path, mailer("send_receipt", "Mails the receipt of an order.", &sent))
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "claude-test", MaxTokens: 1024, Messages: history})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	_, r1 := anthropic.New(h1, nil).Run(context.Background(), "conv-1", history, msg)
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}

	a2 := anthropic.New(openHarness(t, path, mailer("send_receipt", "Mails the receipt of an order.", &sent)), nil)
	_, r2 := a2.Run(context.Background(), "conv-1", history, ask(t, client, a2, history))

	if n := sent.Load(); n != 1 {
		t.Errorf("mails = %d; want 1", n)
	}
	if len(r1) != 1 || len(r2) != 1 || r1[0].Source != harness.Executed || r2[0].Source != harness.Replayed {
		t.Fatalf("runs = %v, %v; want executed, then replayed", describe(r1), describe(r2))
	}
	if r1[0].Key != r2[0].Key {
		t.Errorf("keys = %v, %v; want the same", r1[0].Key, r2[0].Key)
	}
	if tools := api.Requests()[1].Tools; len(tools) != 1 || !sameJSON(tools[0].InputSchema, json.RawMessage(receiptSchema)) {
		t.Errorf("tools after the restart = %s; want send_receipt with the derived schema", toolList(tools))
	}
}

// toolList shows tool definitions as "name: schema" for failure messages.
func toolList(tools []fakeapi.Tool) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = t.Name + ": " + string(t.InputSchema)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
