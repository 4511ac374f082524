package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/agentonce/agentonce/harness/downstream"
)

// payment is the loopback payment service every run charges: it is not
// idempotent (it ignores Idempotency-Key) and counts the charges of each
// intent. It lives in the sweeping process, which is never killed, so its
// counts outlive every crash. GET /charges?intent=X is its lookup, what a
// real payment API offers by a charge's reference.
type payment struct {
	mu      sync.Mutex
	charges map[string][]charge // intent → its charges, in order
	n       int
	srv     *http.Server
	url     string
}

// charge is one charge as the service answers it.
type charge struct {
	ID     string `json:"id"`
	Intent string `json:"intent"`
	Amount int    `json:"amount"`
}

// chargeInput is what the charge tool is given (the model's arguments).
type chargeInput struct {
	Intent string `json:"intent"`
	Amount int    `json:"amount"`
}

func startPayment() (*payment, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &payment{charges: map[string][]charge{}, url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", p.charge)
	mux.HandleFunc("GET /charges", p.lookUp)
	p.srv = &http.Server{Handler: mux}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *payment) close() { p.srv.Close() }

func (p *payment) charge(w http.ResponseWriter, r *http.Request) {
	var in chargeInput
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil || in.Intent == "" {
		http.Error(w, fmt.Sprintf("want {\"intent\":…,\"amount\":…}: %v", err), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.n++
	c := charge{ID: fmt.Sprintf("ch_%d", p.n), Intent: in.Intent, Amount: in.Amount}
	p.charges[in.Intent] = append(p.charges[in.Intent], c)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(c)
}

func (p *payment) lookUp(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	cs := p.charges[r.URL.Query().Get("intent")]
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(cs)
}

// count is how many charges intent produced.
func (p *payment) count(intent string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.charges[intent])
}

// payClient is a worker's client of the payment service: the point after
// the service answered a charge (the effect made, its answer not yet
// read by anyone) is a crash point.
var payClient = &http.Client{Transport: &downstream.Transport{Base: effectPoint{http.DefaultTransport}}}

type effectPoint struct{ base http.RoundTripper }

func (e effectPoint) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := e.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		point("effect")
	}
	return res, err
}

// doCharge charges in through the payment service at base and returns
// the charge as the service answered it.
func doCharge(ctx context.Context, base string, in chargeInput) (json.RawMessage, error) {
	b, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/charges", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return downstream.ReadJSON(payClient.Do(req))
}

// reconcile asks the payment service whether in's charge happened: the
// agentonce tool's Reconcile hook.
func reconcile(ctx context.Context, base string, input json.RawMessage) downstream.Reconciliation {
	var in chargeInput
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
	var cs []charge
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&cs); err != nil {
		return downstream.CannotTell(err)
	}
	if len(cs) == 0 {
		return downstream.DidNotHappen()
	}
	out, _ := json.Marshal(cs[0])
	return downstream.Happened(out)
}
