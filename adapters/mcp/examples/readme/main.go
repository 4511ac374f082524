// Command readme is a shop's MCP server on the official go-sdk, its tools
// written as the SDK's documentation writes them and protected by the lines
// under "agentonce". It serves on stdio.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce"
	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
	"github.com/agentonce/agentonce/journal"
)

type RefundInput struct {
	Order  string `json:"order" jsonschema:"the order id"`
	Amount int    `json:"amount" jsonschema:"the amount in cents"`
}

type StatusInput struct {
	Order string `json:"order" jsonschema:"the order id"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "refund", Description: "Refund an order, in full or in part."}, refund)
	mcp.AddTool(s, &mcp.Tool{Name: "order_status", Description: "The status of an order."}, orderStatus)

	// agentonce: a journal, and every call of the tools above through it.
	h, err := agentonce.Open(context.Background(), "shop.journal", nil)
	if err = errors.Join(err, agentmcp.Wrap(s, h, &agentmcp.Options{Effects: map[string]journal.Effect{"order_status": journal.ReadOnly}})); err != nil {
		log.Fatal(err)
	}

	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func refund(ctx context.Context, req *mcp.CallToolRequest, in RefundInput) (*mcp.CallToolResult, any, error) {
	// A real shop calls its payment provider here, once per intent.
	text := fmt.Sprintf("refunded %d cents of %s", in.Amount, in.Order)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

func orderStatus(ctx context.Context, req *mcp.CallToolRequest, in StatusInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Order + ": shipped"}}}, nil, nil
}
