package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// counted is a tool without a downstream of its own; runs counts its
// executions (its side effects) and err is what each one returns.
func counted(name string, effect journal.Effect, runs *atomic.Int64, err error) harness.Tool {
	return harness.Tool{
		Name:   name,
		Effect: effect,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`{"ok":true}`), nil
		},
	}
}

// openHarness opens the bbolt journal at path and registers tools; it is
// closed when the test ends (closing twice is harmless).
func openHarness(t *testing.T, path string, tools ...harness.Tool) *harness.Harness {
	t.Helper()
	h, err := agentonce.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("agentonce.Open(%s): %v", path, err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.Register(tools...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return h
}

func journalPath(t *testing.T) string { return filepath.Join(t.TempDir(), "agent.journal") }

// newClient is the real SDK client, pointed at the fake API.
func newClient(api *fakeapi.Server) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(api.URL+"/v1/"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// driver is an agent loop on one of the APIs: it keeps the conversation's
// history in that API's types.
type driver interface {
	// say appends a user message.
	say(text string)
	// step asks the model and runs its function calls through a. With
	// keep, the answer and the results join the history; without, they
	// are lost (the process died before sending them). It returns the
	// results, nil when the model answered in text, and the text.
	step(t *testing.T, a *openai.Adapter, keep bool) ([]harness.Result, string)
}

// drivers are the loops every test runs on: Chat Completions, the
// Responses API with the whole input each time, and the Responses API
// chained by previous_response_id with turns counted by the application.
var drivers = []struct {
	name string
	new  func(client sdk.Client, session string) driver
}{
	{"chat", func(c sdk.Client, s string) driver { return &chatDriver{client: c, session: s} }},
	{"responses", func(c sdk.Client, s string) driver { return &responsesDriver{client: c, session: s} }},
	{"responses-chained", func(c sdk.Client, s string) driver { return &responsesDriver{client: c, session: s, chain: true} }},
}

type chatDriver struct {
	client  sdk.Client
	session string
	history []sdk.ChatCompletionMessageParamUnion
}

func (d *chatDriver) say(text string) { d.history = append(d.history, sdk.UserMessage(text)) }

func (d *chatDriver) step(t *testing.T, a *openai.Adapter, keep bool) ([]harness.Result, string) {
	t.Helper()
	cc, err := d.client.Chat.Completions.New(context.Background(), sdk.ChatCompletionNewParams{
		Model: "gpt-test", Messages: d.history, Tools: a.ChatTools(),
	})
	if err != nil {
		t.Fatalf("Chat.Completions.New: %v", err)
	}
	msg := cc.Choices[0].Message
	out, results := a.RunChat(context.Background(), d.session, d.history, msg)
	if keep {
		d.history = append(d.history, msg.ToParam())
		d.history = append(d.history, out...)
	}
	return results, msg.Content
}

type responsesDriver struct {
	client  sdk.Client
	session string
	chain   bool
	// input is the whole conversation (chain false), or the items not
	// yet sent (chain true).
	input responses.ResponseInputParam
	prev  string // the last response's id, when chained
	turns int    // user messages, counted by the application when chained
}

func (d *responsesDriver) say(text string) {
	d.turns++
	d.input = append(d.input, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
}

func (d *responsesDriver) step(t *testing.T, a *openai.Adapter, keep bool) ([]harness.Result, string) {
	t.Helper()
	params := responses.ResponseNewParams{
		Model: "gpt-test", Tools: a.ResponseTools(),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: d.input},
	}
	if d.chain && d.prev != "" {
		params.PreviousResponseID = param.NewOpt(d.prev)
	}
	resp, err := d.client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	var out responses.ResponseInputParam
	var results []harness.Result
	if d.chain {
		out, results = a.RunResponseTurn(context.Background(), d.session, strconv.Itoa(d.turns), resp)
	} else {
		out, results = a.RunResponse(context.Background(), d.session, d.input, resp)
	}
	if keep {
		if d.chain {
			d.prev, d.input = resp.ID, out
		} else {
			// The model's items go back as they came, then the outputs.
			for _, it := range resp.Output {
				d.input = append(d.input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON())))
			}
			d.input = append(d.input, out...)
		}
	}
	return results, resp.OutputText()
}

// converse runs one user turn: the user speaks, and the loop runs the
// model's calls until it answers in text. It returns every result in
// order and the final text.
func converse(t *testing.T, d driver, a *openai.Adapter, user string) ([]harness.Result, string) {
	t.Helper()
	d.say(user)
	var all []harness.Result
	for round := 0; round < 10; round++ {
		results, text := d.step(t, a, true)
		if len(results) == 0 {
			return all, text
		}
		all = append(all, results...)
	}
	t.Fatalf("the conversation did not end within 10 model round-trips")
	return nil, ""
}

// describe lists results as "id status source" for failure messages.
func describe(rs []harness.Result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %v %v", r.CallID, r.Status, r.Source)
		if r.Err != nil {
			parts[i] += " (" + r.Err.Error() + ")"
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// userSpoke reports whether conv ends in a user message.
func userSpoke(conv []fakeapi.Msg) bool { return fakeapi.Last(conv).Role == "user" }
