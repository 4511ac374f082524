package main

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentonce/agentonce/adapters/openai"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "openai-go", Plain: openaiPlain, Once: openaiOnce,
		How: "openai-go's Chat Completions client against a fake API on loopback, the application running the model's function call; the SDK keeps no state, so a restarted application asks the model again from the user's message"})
}

func openaiPlain(ctx context.Context, j job) (outcome, error) {
	text, err := openaiRun(ctx, j, func(msg sdk.ChatCompletionMessage) []sdk.ChatCompletionMessageParamUnion {
		var out []sdk.ChatCompletionMessageParamUnion
		for _, c := range msg.ToolCalls {
			var in worker.ChargeInput
			res := "invalid arguments"
			if json.Unmarshal([]byte(c.Function.Arguments), &in) == nil {
				b, err := worker.DoCharge(ctx, j.Pay, in)
				res = string(b)
				if err != nil {
					res = err.Error()
				}
			}
			out = append(out, sdk.ToolMessage(res, c.ID))
		}
		return out
	})
	return outcome{Status: "charged", Detail: text}, err
}

func openaiOnce(ctx context.Context, j job) (outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	defer h.Close()
	if err := h.Register(worker.ChargeTool(j)); err != nil {
		return outcome{}, err
	}
	a := openai.New(h, nil)
	var history []sdk.ChatCompletionMessageParamUnion
	text, err := openaiRun(ctx, j, func(msg sdk.ChatCompletionMessage) []sdk.ChatCompletionMessageParamUnion {
		out, _ := a.RunChat(ctx, j.Intent, history, msg)
		return out
	}, &history)
	return worker.OnceOutcome(text), err
}

// openaiRun is the application's loop: ask the model, run its calls with
// run, give it their results, until it answers; it returns the tool
// result the model read. history, when given, is kept up to date for run.
func openaiRun(ctx context.Context, j job, run func(sdk.ChatCompletionMessage) []sdk.ChatCompletionMessageParamUnion, history ...*[]sdk.ChatCompletionMessageParamUnion) (string, error) {
	m, err := startFakeModel("/v1/chat/completions", `"role":"tool"`, func() []byte {
		return []byte(fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"charge","arguments":%q}}]}}]}`, worker.ChargeArgs(j.Intent)))
	}, func() []byte {
		return []byte(`{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"fake","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Done."}}]}`)
	})
	if err != nil {
		return "", err
	}
	defer m.close()
	client := sdk.NewClient(option.WithBaseURL(m.url+"/v1/"), option.WithAPIKey("offline"), option.WithMaxRetries(0))
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Charge me $49.")}
	var read string
	for range 4 {
		if len(history) > 0 {
			*history[0] = msgs
		}
		res, err := client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "fake", Messages: msgs})
		if err != nil {
			return "", err
		}
		msg := res.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return read, nil
		}
		results := run(msg)
		msgs = append(msgs, msg.ToParam())
		msgs = append(msgs, results...)
		for _, r := range results {
			if r.OfTool != nil {
				read = r.OfTool.Content.OfString.Value
			}
		}
	}
	return "", fmt.Errorf("the model did not answer in 4 round-trips")
}
