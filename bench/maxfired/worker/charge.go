package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/agentonce/agentonce/harness/downstream"
)

// Charge is one charge as the payment service answers it.
type Charge struct {
	ID     string `json:"id"`
	Intent string `json:"intent"`
	Amount int    `json:"amount"`
}

// ChargeInput is what the charge tool is given (the model's arguments).
type ChargeInput struct {
	Intent string `json:"intent"`
	Amount int    `json:"amount"`
}

// payClient is the client of the payment service: the point after the
// service answered a charge (the effect made, its answer not yet read by
// anyone) is a crash point.
var payClient = &http.Client{Transport: &downstream.Transport{Base: effectPoint{http.DefaultTransport}}}

type effectPoint struct{ base http.RoundTripper }

func (e effectPoint) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := e.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		Point("effect")
	}
	return res, err
}

// DoCharge charges in through the payment service at base and returns
// the charge as the service answered it.
func DoCharge(ctx context.Context, base string, in ChargeInput) (json.RawMessage, error) {
	b, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/charges", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return downstream.ReadJSON(payClient.Do(req))
}

// Reconcile asks the payment service whether in's charge happened: the
// agentonce tool's Reconcile hook, and the server's.
func Reconcile(ctx context.Context, base string, input json.RawMessage) downstream.Reconciliation {
	var in ChargeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return downstream.CannotTell(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/charges?intent="+url.QueryEscape(in.Intent), nil)
	if err != nil {
		return downstream.CannotTell(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return downstream.CannotTell(err)
	}
	defer res.Body.Close()
	var cs []Charge
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&cs); err != nil {
		return downstream.CannotTell(err)
	}
	if len(cs) == 0 {
		return downstream.DidNotHappen()
	}
	out, _ := json.Marshal(cs[0])
	return downstream.Happened(out)
}
