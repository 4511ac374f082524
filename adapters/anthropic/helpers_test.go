package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/adapters/anthropic/internal/fakeapi"
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
	return sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// ask sends history with the adapter's tools and returns the response.
func ask(t *testing.T, client sdk.Client, a *anthropic.Adapter, history []sdk.MessageParam) *sdk.Message {
	t.Helper()
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  history,
		Tools:     a.Tools(),
	})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	return msg
}

// converse runs the agent loop for one user message: it asks the model,
// runs its tool calls, and sends the results back until the model answers
// without tools. It returns the history with the whole exchange, every
// result in order, and the model's final text.
func converse(t *testing.T, client sdk.Client, a *anthropic.Adapter, session string, history []sdk.MessageParam, user string) ([]sdk.MessageParam, []harness.Result, string) {
	t.Helper()
	history = append(history, sdk.NewUserMessage(sdk.NewTextBlock(user)))
	var all []harness.Result
	for round := 0; round < 10; round++ {
		msg := ask(t, client, a, history)
		reply, results := a.Run(context.Background(), session, history, msg)
		history = append(history, msg.ToParam())
		if len(results) == 0 {
			var text string
			for _, b := range msg.Content {
				text += b.Text
			}
			return history, all, text
		}
		all = append(all, results...)
		history = append(history, reply)
	}
	t.Fatalf("the conversation did not end within 10 model round-trips")
	return nil, nil, ""
}

// lastUserText is the text of the last message of req when it is a real
// user message, else "".
func lastUserText(req fakeapi.Request) string {
	m := req.Last()
	if m.Role != "user" || len(m.Content) == 0 || m.Content[0].Type != "text" {
		return ""
	}
	return m.Content[0].Text
}

var errDeclined = errors.New("card declined")

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
