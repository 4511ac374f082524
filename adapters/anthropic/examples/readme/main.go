// Command readme is the program of the adapter's README: a Messages API
// tool loop whose tool, a plain Go function, runs through agentonce. The
// model is given the tool's input schema, derived from ReceiptInput, and
// a repeated call mails the receipt once.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentonce/agentonce"
	agentanthropic "github.com/agentonce/agentonce/adapters/anthropic"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// ReceiptInput is what the model fills in. The schema it is given comes
// from these fields: json tags name them, jsonschema tags describe them.
type ReceiptInput struct {
	To    string `json:"to" jsonschema:"the customer's email address"`
	Order string `json:"order" jsonschema:"the order number"`
}

// sendReceipt mails a receipt: the side effect that must not happen twice.
func sendReceipt(ctx context.Context, in ReceiptInput) (string, error) {
	fmt.Printf("mailing the receipt of order %s to %s\n", in.Order, in.To)
	return "receipt mailed", nil
}

func main() {
	ctx := context.Background()
	client := anthropic.NewClient() // reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL)

	h, err := agentonce.Open(ctx, "agent.journal", nil) // added: the journal, once per process
	check(err)                                          // added
	defer h.Close()                                     // added
	// changed: the tool was an anthropic.ToolParam with a hand-written schema
	receipt := harness.Typed("send_receipt", journal.Keyed, sendReceipt)
	receipt.Description = "Mails the receipt of an order to the customer."
	check(h.Register(receipt))      // added
	a := agentanthropic.New(h, nil) // added

	history := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Mail the receipt of order 1001 to ada@example.com.")),
	}
	for {
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     anthropic.ModelClaudeSonnet4_5,
			MaxTokens: 1024,
			Messages:  history,
			Tools:     a.Tools(), // changed: name, description, schema from the Go type
		})
		check(err)
		history = append(history, msg.ToParam())
		reply, results := a.Run(ctx, "order-1001", history, msg) // changed: runs the tool_use blocks
		if len(results) == 0 {
			for _, b := range msg.Content {
				fmt.Println(b.Text)
			}
			return
		}
		history = append(history, reply)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
