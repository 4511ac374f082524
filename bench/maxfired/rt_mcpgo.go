package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
	"github.com/agentonce/agentonce/mcpcall"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "mcp-go", Plain: mcpgoPlain, Once: mcpgoOnce,
		How: "an mcp-go server whose tool charges, called by mcp-go's client; mcp-go keeps no state across a restart, so the host calls the tool again in a fresh process"})
}

func mcpgoPlain(ctx context.Context, j job) (outcome, error) {
	s := server.NewMCPServer("shop", "1.0.0")
	s.AddTool(mcp.NewTool("charge", mcp.WithDescription("Charges the customer."),
		mcp.WithString("intent", mcp.Required()), mcp.WithNumber("amount", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in worker.ChargeInput
			if err := json.Unmarshal(req.Params.RawArguments, &in); err != nil {
				if b, err2 := json.Marshal(req.Params.Arguments); err2 == nil {
					err = json.Unmarshal(b, &in)
				}
				if err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
			}
			out, err := worker.DoCharge(ctx, j.Pay, in)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(string(out)), nil
		})
	text, err := mcpgoCall(ctx, s, j, true)
	return outcome{Status: "charged", Detail: text}, err
}

func mcpgoOnce(ctx context.Context, j job) (outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	defer h.Close()
	s := server.NewMCPServer("shop", "1.0.0")
	if err := h.Register(worker.ChargeTool(j)); err != nil {
		return outcome{}, err
	}
	if err := mcpgo.AddTools(s, h, &mcpgo.Options{TrustClientScope: true}); err != nil {
		return outcome{}, err
	}
	text, err := mcpgoCall(ctx, s, j, false)
	return worker.OnceOutcome(text), err
}

// mcpgoCall calls the charge tool of s with mcp-go's in-process client,
// the intent as the call's session in _meta, and returns the result's
// text.
func mcpgoCall(ctx context.Context, s *server.MCPServer, j job, plain bool) (string, error) {
	c, err := client.NewInProcessClient(s)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return "", err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "maxfired", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return "", err
	}
	var req mcp.CallToolRequest
	req.Params.Name = "charge"
	req.Params.Arguments = json.RawMessage(worker.ChargeArgs(j.Intent))
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{mcpcall.MetaSession: j.Intent, mcpcall.MetaTurn: "1"}}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var text []string
	for _, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	if res.IsError && plain {
		return "", errors.New("the tool failed: " + strings.Join(text, " "))
	}
	return strings.Join(text, "\n"), nil // with agentonce, the harness's answer says what happened
}
