package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
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

// toolList shows tool definitions as "name: parameters" for failure
// messages.
func toolList(tools []fakeapi.Tool) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = t.Name + ": " + string(t.Parameters)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// A Typed tool reaches the model with the schema of its Go input type and
// its description, on both APIs, and a tool with a Schema of its own
// keeps it.
func TestTypedToolSchema(t *testing.T) {
	for _, dr := range drivers {
		t.Run(dr.name, func(t *testing.T) {
			var sent atomic.Int64
			var log bytes.Buffer
			api := fakeapi.New(func([]fakeapi.Msg) fakeapi.Reply { return fakeapi.Reply{Text: "hi"} })
			defer api.Close()
			own := mailer("own_schema", "Mails with a schema of its own.", &sent)
			own.Schema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}}}`)
			h := openHarness(t, journalPath(t), mailer("send_receipt", "Mails the receipt of an order.", &sent), own)
			a := openai.New(h, &openai.Options{Logger: warnings(&log)})
			converse(t, dr.new(newClient(api), "conv-1"), a, "hi")

			got := api.Requests()[0].Tools
			want := []fakeapi.Tool{
				{Name: "own_schema", Description: "Mails with a schema of its own.", Parameters: own.Schema},
				{Name: "send_receipt", Description: "Mails the receipt of an order.", Parameters: json.RawMessage(receiptSchema)},
			}
			if len(got) != len(want) {
				t.Fatalf("tools = %s; want %d", toolList(got), len(want))
			}
			for i := range want {
				if got[i].Name != want[i].Name || got[i].Description != want[i].Description || !sameJSON(got[i].Parameters, want[i].Parameters) {
					t.Errorf("tool %d = {%s, %q, %s}; want {%s, %q, %s}", i, got[i].Name, got[i].Description, got[i].Parameters,
						want[i].Name, want[i].Description, want[i].Parameters)
				}
			}
			if log.Len() != 0 {
				t.Errorf("warnings for tools with a schema and a description:\n%s", log.String())
			}
			if n := sent.Load(); n != 0 {
				t.Errorf("mails after listing the tools = %d; want 0", n)
			}
		})
	}
}

// A tool the model would get no schema or no description for is warned
// about once, by name, however often and on whichever API the tools are
// listed; a Go type with no JSON Schema (a channel) is one, and is still
// offered as an object.
func TestToolWarnings(t *testing.T) {
	var sent, runs atomic.Int64
	var log bytes.Buffer
	api := fakeapi.New(func([]fakeapi.Msg) fakeapi.Reply { return fakeapi.Reply{Text: "hi"} })
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
	a := openai.New(h, &openai.Options{Logger: warnings(&log)})
	for _, dr := range drivers {
		for range 2 {
			converse(t, dr.new(newClient(api), "conv-1"), a, "hi")
		}
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
	reqs := api.Requests()
	for _, tool := range reqs[len(reqs)-1].Tools {
		if tool.Name != "send_receipt" && tool.Name != "undescribed" && !sameJSON(tool.Parameters, json.RawMessage(`{"type":"object"}`)) {
			t.Errorf("tool %s parameters = %s; want {\"type\":\"object\"}", tool.Name, tool.Parameters)
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
	api := fakeapi.New(func([]fakeapi.Msg) fakeapi.Reply {
		return fakeapi.Reply{Calls: []fakeapi.Call{{ID: "call_1", Name: "send_receipt", Arguments: `{"to":"ada@example.com","order":"1001","note":null}`}}}
	})
	defer api.Close()
	client := newClient(api)
	path := journalPath(t)
	history := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Mail me the receipt.")}
	ask := func(a *openai.Adapter) sdk.ChatCompletionMessage {
		params := sdk.ChatCompletionNewParams{Model: "gpt-test", Messages: history}
		if a != nil {
			params.Tools = a.ChatTools()
		}
		cc, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatalf("Chat.Completions.New: %v", err)
		}
		return cc.Choices[0].Message
	}

	h1 := openHarness(t, path, mailer("send_receipt", "Mails the receipt of an order.", &sent))
	_, r1 := openai.New(h1, nil).RunChat(context.Background(), "conv-1", history, ask(nil))
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	a2 := openai.New(openHarness(t, path, mailer("send_receipt", "Mails the receipt of an order.", &sent)), nil)
	_, r2 := a2.RunChat(context.Background(), "conv-1", history, ask(a2))

	if n := sent.Load(); n != 1 {
		t.Errorf("mails = %d; want 1", n)
	}
	if len(r1) != 1 || len(r2) != 1 || r1[0].Source != harness.Executed || r2[0].Source != harness.Replayed {
		t.Fatalf("runs = %s, %s; want executed, then replayed", describe(r1), describe(r2))
	}
	if r1[0].Key != r2[0].Key {
		t.Errorf("keys = %v, %v; want the same", r1[0].Key, r2[0].Key)
	}
	if tools := api.Requests()[1].Tools; len(tools) != 1 || !sameJSON(tools[0].Parameters, json.RawMessage(receiptSchema)) {
		t.Errorf("tools after the restart = %s; want send_receipt with the derived schema", toolList(tools))
	}
}
