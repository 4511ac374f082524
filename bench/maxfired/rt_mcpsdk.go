package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "go-sdk", Plain: mcpsdkPlain, Once: mcpsdkOnce,
		How: "a server of the official MCP go-sdk whose tool charges, called by the go-sdk's client; the go-sdk keeps no state across a restart, so the host calls the tool again in a fresh process"})
}

func mcpsdkPlain(ctx context.Context, j job) (outcome, error) {
	s := sdk.NewServer(&sdk.Implementation{Name: "shop", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "charge", Description: "Charges the customer."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in worker.ChargeInput) (*sdk.CallToolResult, any, error) {
			out, err := worker.DoCharge(ctx, j.Pay, in)
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}, nil, nil
		})
	text, err := mcpsdkCall(ctx, s, j, true)
	return outcome{Status: "charged", Detail: text}, err
}

func mcpsdkOnce(ctx context.Context, j job) (outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	defer h.Close()
	if err := h.Register(worker.ChargeTool(j)); err != nil {
		return outcome{}, err
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "shop", Version: "v1"}, nil)
	if err := agentmcp.AddTools(s, h, &agentmcp.Options{TrustClientScope: true}); err != nil {
		return outcome{}, err
	}
	text, err := mcpsdkCall(ctx, s, j, false)
	return worker.OnceOutcome(text), err
}

// mcpsdkCall calls the charge tool of s with the go-sdk's client over its
// in-memory transport, the intent as the call's session, and returns the
// result's text; plain, a tool error is an error.
func mcpsdkCall(ctx context.Context, s *sdk.Server, j job, plain bool) (string, error) {
	ct, st := sdk.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return "", err
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "charge", Arguments: json.RawMessage(worker.ChargeArgs(j.Intent))}
	agentmcp.SetScope(params, agentmcp.Scope{Session: j.Intent, Turn: "1"})
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return "", err
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	if res.IsError && plain {
		return "", errors.New("the tool failed: " + strings.Join(text, " "))
	}
	return strings.Join(text, "\n"), nil // with agentonce, the harness's answer says what happened
}
