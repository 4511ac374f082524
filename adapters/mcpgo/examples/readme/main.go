// Command readme is a shop's MCP server on mark3labs/mcp-go, its tools
// written as mcp-go's documentation writes them and protected by the lines
// under "agentonce". It serves on stdio.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/journal"
)

func main() {
	s := server.NewMCPServer("shop", "1.0.0")
	s.AddTool(mcp.NewTool("refund",
		mcp.WithDescription("Refund an order, in full or in part."),
		mcp.WithString("order", mcp.Required(), mcp.Description("The order id.")),
		mcp.WithNumber("amount", mcp.Required(), mcp.Description("The amount in cents.")),
	), refund)
	s.AddTool(mcp.NewTool("order_status",
		mcp.WithDescription("The status of an order."),
		mcp.WithString("order", mcp.Required(), mcp.Description("The order id.")),
	), orderStatus)

	// agentonce: a journal, and every call of the tools above through it.
	h, err := agentonce.Open(context.Background(), "shop.journal", nil)
	if err = errors.Join(err, mcpgo.Wrap(s, h, &mcpgo.Options{Effects: map[string]journal.Effect{"order_status": journal.ReadOnly}})); err != nil {
		log.Fatal(err)
	}

	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}

func refund(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	order, err := req.RequireString("order")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	// A real shop calls its payment provider here, once per intent.
	return mcp.NewToolResultText(fmt.Sprintf("refunded %.0f cents of %s", req.GetFloat("amount", 0), order)), nil
}

func orderStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(req.GetString("order", "") + ": shipped"), nil
}
