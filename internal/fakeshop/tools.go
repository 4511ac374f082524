package fakeshop

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// ChargeSchema is charge_card's input schema.
const ChargeSchema = `{"type":"object","properties":{"amount":{"type":"integer","description":"cents"},"currency":{"type":"string"}},"required":["amount","currency"]}`

// ReceiptSchema is send_receipt's input schema.
const ReceiptSchema = `{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`

// ChargeTool is charge_card: a Keyed tool that charges through the Shop,
// its requests carrying the idempotency key.
func (s *Shop) ChargeTool() harness.Tool {
	return harness.Tool{
		Name:        "charge_card",
		Description: "Charges the customer's card.",
		Effect:      journal.Keyed,
		Schema:      json.RawMessage(ChargeSchema),
		Func:        s.post("/charges"),
	}
}

// ReceiptTool is send_receipt: an Unkeyed tool (mail has no idempotency)
// that mails through the Shop.
func (s *Shop) ReceiptTool() harness.Tool {
	return harness.Tool{
		Name:        "send_receipt",
		Description: "Mails the receipt of the last charge.",
		Effect:      journal.Unkeyed,
		Schema:      json.RawMessage(ReceiptSchema),
		Func:        s.post("/emails"),
	}
}

func (s *Shop) post(path string) harness.Func {
	client := &http.Client{Transport: &downstream.Transport{}}
	return func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(in))
		if err != nil {
			return nil, retryclass.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		return downstream.ReadJSON(client.Do(req))
	}
}
