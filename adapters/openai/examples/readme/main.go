// Command readme is the program of the adapter's README: a Chat
// Completions tool loop whose tool, a plain Go function, runs through
// agentonce. The model is given the tool's input schema, derived from
// ReceiptInput, and a repeated call mails the receipt once.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"

	"github.com/agentonce/agentonce"
	agentopenai "github.com/agentonce/agentonce/adapters/openai"
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
	client := openai.NewClient() // reads OPENAI_API_KEY (and OPENAI_BASE_URL)

	h, err := agentonce.Open(ctx, "agent.journal", nil) // added: the journal, once per process
	check(err)                                          // added
	defer h.Close()                                     // added
	// changed: the tool was a shared.FunctionDefinitionParam with a hand-written schema
	receipt := harness.Typed("send_receipt", journal.Keyed, sendReceipt)
	receipt.Description = "Mails the receipt of an order to the customer."
	check(h.Register(receipt))   // added
	a := agentopenai.New(h, nil) // added

	history := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Mail the receipt of order 1001 to ada@example.com."),
	}
	for {
		completion, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    openai.ChatModelGPT5,
			Messages: history,
			Tools:    a.ChatTools(), // changed: name, description, schema from the Go type
		})
		check(err)
		msg := completion.Choices[0].Message
		history = append(history, msg.ToParam())
		toolMsgs, results := a.RunChat(ctx, "order-1001", history, msg) // changed: runs the tool calls
		if len(results) == 0 {
			fmt.Println(msg.Content)
			return
		}
		history = append(history, toolMsgs...)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
