package main

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "anthropic-sdk-go", Plain: anthropicPlain, Once: anthropicOnce,
		How: "anthropic-sdk-go's Messages client against a fake API on loopback, the application running the model's tool_use; the SDK keeps no state, so a restarted application asks the model again from the user's message"})
}

func anthropicPlain(ctx context.Context, j job) (outcome, error) {
	text, err := anthropicRun(ctx, j, func(_ []sdk.MessageParam, msg *sdk.Message) sdk.MessageParam {
		var blocks []sdk.ContentBlockParamUnion
		for _, b := range msg.Content {
			if b.Type != "tool_use" {
				continue
			}
			u := b.AsToolUse()
			var in worker.ChargeInput
			res, isErr := "invalid input", true
			if json.Unmarshal(u.Input, &in) == nil {
				out, err := worker.DoCharge(ctx, j.Pay, in)
				res, isErr = string(out), err != nil
				if err != nil {
					res = err.Error()
				}
			}
			blocks = append(blocks, sdk.NewToolResultBlock(u.ID, res, isErr))
		}
		return sdk.NewUserMessage(blocks...)
	})
	return outcome{Status: "charged", Detail: text}, err
}

func anthropicOnce(ctx context.Context, j job) (outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	defer h.Close()
	if err := h.Register(worker.ChargeTool(j)); err != nil {
		return outcome{}, err
	}
	a := anthropic.New(h, nil)
	text, err := anthropicRun(ctx, j, func(history []sdk.MessageParam, msg *sdk.Message) sdk.MessageParam {
		out, _ := a.Run(ctx, j.Intent, history, msg)
		return out
	})
	return worker.OnceOutcome(text), err
}

// anthropicRun is the application's loop: ask the model, run its
// tool_use blocks with run (given the history before msg), give it the
// results, until it answers; it returns the tool result the model read.
func anthropicRun(ctx context.Context, j job, run func([]sdk.MessageParam, *sdk.Message) sdk.MessageParam) (string, error) {
	m, err := startFakeModel("/v1/messages", `"tool_result"`, func() []byte {
		return []byte(fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"fake","stop_reason":"tool_use","content":[{"type":"tool_use","id":"toolu_1","name":"charge","input":%s}],"usage":{"input_tokens":1,"output_tokens":1}}`, worker.ChargeArgs(j.Intent)))
	}, func() []byte {
		return []byte(`{"id":"msg_2","type":"message","role":"assistant","model":"fake","stop_reason":"end_turn","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	if err != nil {
		return "", err
	}
	defer m.close()
	client := sdk.NewClient(option.WithBaseURL(m.url), option.WithAPIKey("offline"), option.WithMaxRetries(0))
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Charge me $49."))}
	var read string
	for range 4 {
		res, err := client.Messages.New(ctx, sdk.MessageNewParams{Model: "fake", MaxTokens: 256, Messages: msgs})
		if err != nil {
			return "", err
		}
		if res.StopReason != "tool_use" {
			return read, nil
		}
		results := run(msgs, res)
		msgs = append(msgs, res.ToParam(), results)
		if results.OfUser == nil {
			return "", fmt.Errorf("no tool results for the model's tool_use")
		}
		for _, b := range results.OfUser.Content {
			if b.OfToolResult != nil && len(b.OfToolResult.Content) > 0 && b.OfToolResult.Content[0].OfText != nil {
				read = b.OfToolResult.Content[0].OfText.Text
			}
		}
	}
	return "", fmt.Errorf("the model did not answer in 4 round-trips")
}
