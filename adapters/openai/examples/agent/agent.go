package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
)

// session is the application's id of the conversation; it must be the
// same after a restart.
const session = "order-1001"

// step is one reply of the scripted model. restart says the agent dies
// after running the step's calls, before their results reach the model.
type step struct {
	reply   fakeapi.Reply
	restart bool
}

const charge49 = `{"amount":4900,"currency":"usd"}`

func calls(cs ...fakeapi.Call) []fakeapi.Call { return cs }

// turns are the user's messages, each with the model's replies to it.
var turns = []struct {
	user  string
	steps []step
}{
	{"Charge my card $49 for order 1001 and mail me the receipt.", []step{
		{reply: fakeapi.Reply{Calls: calls(
			fakeapi.Call{ID: "call_01", Name: "charge_card", Arguments: charge49},
			fakeapi.Call{ID: "call_02", Name: "charge_card", Arguments: `{"currency":"usd","amount":4900}`},
			fakeapi.Call{ID: "call_03", Name: "send_receipt", Arguments: `{"to":"ada@example.com"}`},
		)}, restart: true},
		{reply: fakeapi.Reply{Calls: calls(
			fakeapi.Call{ID: "call_04", Name: "charge_card", Arguments: charge49},
			fakeapi.Call{ID: "call_05", Name: "send_receipt", Arguments: `{"to":"ada@example.com"}`},
		)}},
		{reply: fakeapi.Reply{Text: "Let me make sure the charge went through.", Calls: calls(
			fakeapi.Call{ID: "call_06", Name: "charge_card", Arguments: charge49},
		)}},
		{reply: fakeapi.Reply{Text: "Done: $49.00 charged, receipt mailed to ada@example.com."}},
	}},
	{"Add a $5 tip, please.", []step{
		{reply: fakeapi.Reply{Calls: calls(fakeapi.Call{ID: "call_07", Name: "charge_card", Arguments: `{"amount":-500,"currency":"usd"}`})}},
		{reply: fakeapi.Reply{Text: "The amount must be positive; charging $5.00.", Calls: calls(
			fakeapi.Call{ID: "call_08", Name: "charge_card", Arguments: `{"amount":500,"currency":"usd"}`},
		)}},
		{reply: fakeapi.Reply{Text: "Tip of $5.00 charged."}},
	}},
}

// summary is what a run did, over both APIs.
type summary struct {
	sources    map[string]int // results by status and source, "succeeded executed" …
	charges    int
	emails     int
	duplicates int
}

// conversation is an agent loop on one API; it keeps the history in that
// API's types.
type conversation interface {
	say(text string)
	// ask asks the model and runs its calls; with keep, the answer and
	// the results join the history. It returns the results, none when
	// the model answered.
	ask(ctx context.Context, a *openai.Adapter, keep bool) ([]harness.Result, error)
}

// run plays the conversation on each API, with a journal and a shop of
// its own, in dir.
func run(ctx context.Context, dir string, out io.Writer) (summary, error) {
	sum := summary{sources: map[string]int{}}
	for _, api := range []string{"chat", "responses"} {
		if err := runOn(ctx, api, filepath.Join(dir, api+".journal"), out, &sum); err != nil {
			return sum, fmt.Errorf("%s: %w", api, err)
		}
	}
	fmt.Fprintf(out, "\nside effects, both APIs: %d charges, %d mails\n", sum.charges, sum.emails)
	fmt.Fprintf(out, "duplicate side effects: %d\n", sum.duplicates)
	return sum, nil
}

func runOn(ctx context.Context, api, journal string, out io.Writer, sum *summary) error {
	var script []step
	for _, t := range turns {
		script = append(script, t.steps...)
	}
	n := 0
	srv := fakeapi.New(func([]fakeapi.Msg) fakeapi.Reply {
		n++ // the server answers one request at a time here
		return script[n-1].reply
	})
	defer srv.Close()
	shop := fakeshop.NewShop()
	defer shop.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("offline"))

	open := func() (*harness.Harness, *openai.Adapter, error) {
		h, err := agentonce.Open(ctx, journal, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := h.Register(shop.ChargeTool(), shop.ReceiptTool()); err != nil {
			h.Close()
			return nil, nil, err
		}
		return h, openai.New(h, &openai.Options{Tenant: "acme"}), nil
	}
	h, a, err := open()
	if err != nil {
		return err
	}
	defer func() { h.Close() }()

	var conv conversation = &chat{client: client, out: out}
	title := "Chat Completions"
	if api == "responses" {
		conv, title = &response{client: client, out: out}, "the Responses API"
	}
	fmt.Fprintf(out, "== agentonce on %s (offline: a fake API on loopback), conversation %s\n", title, session)
	for _, t := range turns {
		fmt.Fprintf(out, "\nuser  > %s\n", t.user)
		conv.say(t.user)
		for {
			restart := script[n].restart
			results, err := conv.ask(ctx, a, !restart)
			if err != nil {
				return err
			}
			if len(results) == 0 {
				break
			}
			for _, r := range results {
				fmt.Fprintf(out, "        result %s: %v, %v: %s\n", r.CallID, r.Status, r.Source, short(r.ForModel()))
				sum.sources[r.Status.String()+" "+r.Source.String()]++
			}
			if restart {
				// The calls ran, but their results never reach the model:
				// the process dies. The next one opens the same journal
				// and sends the same history again.
				fmt.Fprintln(out, "        -- the agent restarts before sending these results; the model is asked again --")
				if err := h.Close(); err != nil {
					return err
				}
				if h, a, err = open(); err != nil {
					return err
				}
			}
		}
	}
	c, m, d := len(shop.Charges()), len(shop.Emails()), shop.Duplicates()
	fmt.Fprintf(out, "\nside effects: %d charges, %d mail, %d duplicates\n", c, m, d)
	sum.charges += c
	sum.emails += m
	sum.duplicates += d
	return nil
}

// chat is the loop on Chat Completions: the whole history each time.
type chat struct {
	client  sdk.Client
	out     io.Writer
	history []sdk.ChatCompletionMessageParamUnion
}

func (c *chat) say(text string) { c.history = append(c.history, sdk.UserMessage(text)) }

func (c *chat) ask(ctx context.Context, a *openai.Adapter, keep bool) ([]harness.Result, error) {
	cc, err := c.client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{
		Model: sdk.ChatModelGPT4o, Messages: c.history, Tools: a.ChatTools(),
	})
	if err != nil {
		return nil, err
	}
	msg := cc.Choices[0].Message
	if msg.Content != "" {
		fmt.Fprintf(c.out, "model > %s\n", msg.Content)
	}
	for _, tc := range msg.ToolCalls {
		fmt.Fprintf(c.out, "model > %s %s  [%s]\n", tc.Function.Name, tc.Function.Arguments, tc.ID)
	}
	toolMsgs, results := a.RunChat(ctx, session, c.history, msg)
	if keep {
		c.history = append(append(c.history, msg.ToParam()), toolMsgs...)
	}
	return results, nil
}

// response is the loop on the Responses API, sending the whole input each
// time (so that ResponseUserTurn sees every user message).
type response struct {
	client sdk.Client
	out    io.Writer
	input  responses.ResponseInputParam
}

func (r *response) say(text string) {
	r.input = append(r.input, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
}

func (r *response) ask(ctx context.Context, a *openai.Adapter, keep bool) ([]harness.Result, error) {
	resp, err := r.client.Responses.New(ctx, responses.ResponseNewParams{
		Model: sdk.ChatModelGPT4o, Tools: a.ResponseTools(),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: r.input},
	})
	if err != nil {
		return nil, err
	}
	for _, it := range resp.Output {
		switch it.Type {
		case "message":
			fmt.Fprintf(r.out, "model > %s\n", it.Content[0].Text)
		case "function_call":
			fmt.Fprintf(r.out, "model > %s %s  [%s]\n", it.Name, it.Arguments.OfString, it.CallID)
		}
	}
	outputs, results := a.RunResponse(ctx, session, r.input, resp)
	if keep {
		// The model's items go back as they came, then the outputs.
		for _, it := range resp.Output {
			r.input = append(r.input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON())))
		}
		r.input = append(r.input, outputs...)
	}
	return results, nil
}

// short cuts a tool result for the transcript.
func short(s string) string {
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return strings.TrimSpace(s)
}
