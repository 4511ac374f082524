package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// The agent's tools, one per effect kind. Each is a plain HTTP client
// call; the harness supplies the key (through downstream.Transport), the
// retries and the journal.

type chargeInput struct {
	Customer    string `json:"customer"`
	Order       string `json:"order"`
	AmountCents int    `json:"amount_cents"`
	Currency    string `json:"currency"`
}

type chargeOutput struct {
	ID          string `json:"id"`
	Order       string `json:"order"`
	AmountCents int    `json:"amount_cents"`
	Currency    string `json:"currency"`
	Status      string `json:"status"`
}

type emailInput struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

type addressInput struct {
	Customer string `json:"customer"`
	Address  string `json:"address"`
}

type lookupInput struct {
	Customer string `json:"customer"`
}

// toolTimeout bounds each attempt; a delayed answer past it is a
// maybe-executed failure. Short, for the demo.
const toolTimeout = 300 * time.Millisecond

// tools returns the agent's tools. apiClient and mailClient carry the
// downstream.Transport (key and request id) over the fault injectors.
func tools(baseURL string, apiClient, mailClient *http.Client) []harness.Tool {
	charge := harness.Typed("charge_card", journal.Keyed,
		func(ctx context.Context, in chargeInput) (json.RawMessage, error) {
			return doJSON(ctx, apiClient, http.MethodPost, baseURL+"/charges", in)
		})
	charge.Timeout = toolTimeout

	email := harness.Typed("send_email", journal.Unkeyed,
		func(ctx context.Context, in emailInput) (json.RawMessage, error) {
			return doJSON(ctx, mailClient, http.MethodPost, baseURL+"/emails", in)
		})
	email.Timeout = toolTimeout
	// The mail API answers as soon as it has the request (it does no slow
	// work after the client gives up), so the tool claims a short settle
	// window; without the claim the harness would wait harness.DefaultSettle
	// (minutes) before it trusted a "not sent".
	email.Settle = toolTimeout
	// The mail API keeps the key as the message's reference and can be
	// asked about it: after a crash or a lost answer the harness asks
	// instead of sending again.
	email.Reconcile = func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
		out, err := doJSON(ctx, mailClient, http.MethodGet, baseURL+"/emails/"+key.String(), nil)
		var se *retryclass.StatusError
		switch {
		case err == nil:
			return downstream.Happened(out)
		case errors.As(err, &se) && se.Status == http.StatusNotFound:
			return downstream.DidNotHappen() // provably not sent: the harness may send it
		}
		return downstream.CannotTell(err) // the outcome stays unknown; a re-issue asks again
	}

	address := harness.Typed("set_shipping_address", journal.Idempotent,
		func(ctx context.Context, in addressInput) (json.RawMessage, error) {
			return doJSON(ctx, apiClient, http.MethodPut, baseURL+"/customers/"+in.Customer+"/address", in)
		})
	address.Timeout = toolTimeout

	lookup := harness.Typed("lookup_customer", journal.ReadOnly,
		func(ctx context.Context, in lookupInput) (json.RawMessage, error) {
			return doJSON(ctx, apiClient, http.MethodGet, baseURL+"/customers/"+in.Customer, nil)
		})
	lookup.Timeout = toolTimeout

	return []harness.Tool{charge, email, address, lookup}
}

// doJSON sends body as JSON and returns the JSON answer, or a classified
// error (retryclass.ResponseError) for a non-2xx answer.
func doJSON(ctx context.Context, c *http.Client, method, url string, body any) (json.RawMessage, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, retryclass.Permanent(err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, retryclass.Permanent(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := retryclass.ResponseError(resp); err != nil {
		return nil, err
	}
	var out json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		// The request was answered 2xx: the effect happened, only the
		// answer was cut. Not a reason to send it again blindly.
		return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("%s %s: reading the answer: %w", method, url, err))
	}
	return out, nil
}
