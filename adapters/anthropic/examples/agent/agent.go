package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/adapters/anthropic/internal/fakeapi"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/fakeshop"
)

// session is the application's id of the conversation: the Messages API
// has none, and it must be the same after a restart.
const session = "order-1001"

// step is one reply of the scripted model. restart says the agent dies
// after running the step's tools, before their results reach the model.
type step struct {
	content []fakeapi.Block
	restart bool
}

const charge49 = `{"amount":4900,"currency":"usd"}`

// turns are the user's messages, each with the model's replies to it.
var turns = []struct {
	user  string
	steps []step
}{
	{"Charge my card $49 for order 1001 and mail me the receipt.", []step{
		{content: []fakeapi.Block{
			fakeapi.Text("I'll charge the card and mail the receipt."),
			fakeapi.ToolUse("toolu_01", "charge_card", charge49),
			fakeapi.ToolUse("toolu_02", "charge_card", `{"currency":"usd","amount":4900}`),
			fakeapi.ToolUse("toolu_03", "send_receipt", `{"to":"ada@example.com"}`),
		}, restart: true},
		{content: []fakeapi.Block{
			fakeapi.Text("I'll charge the card and mail the receipt."),
			fakeapi.ToolUse("toolu_04", "charge_card", charge49),
			fakeapi.ToolUse("toolu_05", "send_receipt", `{"to":"ada@example.com"}`),
		}},
		{content: []fakeapi.Block{
			fakeapi.Text("Let me make sure the charge went through."),
			fakeapi.ToolUse("toolu_06", "charge_card", charge49),
		}},
		{content: []fakeapi.Block{fakeapi.Text("Done: $49.00 charged, receipt mailed to ada@example.com.")}},
	}},
	{"Add a $5 tip, please.", []step{
		{content: []fakeapi.Block{fakeapi.ToolUse("toolu_07", "charge_card", `{"amount":-500,"currency":"usd"}`)}},
		{content: []fakeapi.Block{
			fakeapi.Text("The amount must be positive; charging $5.00."),
			fakeapi.ToolUse("toolu_08", "charge_card", `{"amount":500,"currency":"usd"}`),
		}},
		{content: []fakeapi.Block{fakeapi.Text("Tip of $5.00 charged.")}},
	}},
}

// summary is what a run did.
type summary struct {
	sources    map[string]int // results by status and source, "succeeded executed" …
	charges    int
	emails     int
	duplicates int
}

// run plays the conversation against the fake API with a journal in dir.
func run(ctx context.Context, dir string, out io.Writer) (summary, error) {
	var script []step
	for _, t := range turns {
		script = append(script, t.steps...)
	}
	n := 0
	api := fakeapi.New(func(fakeapi.Request) []fakeapi.Block {
		n++ // the server answers one request at a time here
		return script[n-1].content
	})
	defer api.Close()
	shop := fakeshop.NewShop()
	defer shop.Close()
	client := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("offline"))

	journal := filepath.Join(dir, "agent.journal")
	open := func() (*harness.Harness, *anthropic.Adapter, error) {
		h, err := agentonce.Open(ctx, journal, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := h.Register(shop.ChargeTool(), shop.ReceiptTool()); err != nil {
			h.Close()
			return nil, nil, err
		}
		return h, anthropic.New(h, &anthropic.Options{Tenant: "acme"}), nil
	}
	h, a, err := open()
	if err != nil {
		return summary{}, err
	}
	defer func() { h.Close() }()

	sum := summary{sources: map[string]int{}}
	fmt.Fprintf(out, "agentonce on the Anthropic Messages API (offline: a fake API on loopback), conversation %s\n", session)
	var history []sdk.MessageParam
	for _, t := range turns {
		fmt.Fprintf(out, "\nuser  > %s\n", t.user)
		history = append(history, sdk.NewUserMessage(sdk.NewTextBlock(t.user)))
		for {
			msg, err := client.Messages.New(ctx, sdk.MessageNewParams{
				Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: history, Tools: a.Tools(),
			})
			if err != nil {
				return sum, err
			}
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					fmt.Fprintf(out, "model > %s\n", b.Text)
				case "tool_use":
					fmt.Fprintf(out, "model > %s %s  [%s]\n", b.Name, b.Input, b.ID)
				}
			}
			reply, results := a.Run(ctx, session, history, msg)
			if len(results) == 0 {
				history = append(history, msg.ToParam())
				break
			}
			for i, r := range results {
				res := reply.OfUser.Content[i].OfToolResult
				fmt.Fprintf(out, "        tool_result %s: %v, %v, is_error %v: %s\n", r.CallID, r.Status, r.Source, res.IsError.Value, short(r.ForModel()))
				sum.sources[r.Status.String()+" "+r.Source.String()]++
			}
			if script[n-1].restart {
				// The tools ran, but their results never reach the model:
				// the process dies. The next one opens the same journal
				// and sends the same history again.
				fmt.Fprintln(out, "        -- the agent restarts before sending these results; the model is asked again --")
				if err := h.Close(); err != nil {
					return sum, err
				}
				if h, a, err = open(); err != nil {
					return sum, err
				}
				continue
			}
			history = append(history, msg.ToParam(), reply)
		}
	}
	sum.charges, sum.emails, sum.duplicates = len(shop.Charges()), len(shop.Emails()), shop.Duplicates()
	fmt.Fprintf(out, "\nside effects: %d charges, %d mail\n", sum.charges, sum.emails)
	fmt.Fprintf(out, "duplicate side effects: %d\n", sum.duplicates)
	return sum, nil
}

// short cuts a tool result for the transcript.
func short(s string) string {
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return strings.TrimSpace(s)
}
