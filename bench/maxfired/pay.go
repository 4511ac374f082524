package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

// payment is the loopback payment service every run charges: it is not
// idempotent (it ignores Idempotency-Key) and counts the charges of each
// intent. It lives in the sweeping process, which is never killed, so its
// counts outlive every crash. GET /charges?intent=X is its lookup, what a
// real payment API offers by a charge's reference.
type payment struct {
	mu      sync.Mutex
	charges map[string][]worker.Charge // intent → its charges, in order
	n       int
	srv     *http.Server
	url     string
}

func startPayment() (*payment, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &payment{charges: map[string][]worker.Charge{}, url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", p.charge)
	mux.HandleFunc("GET /charges", p.lookUp)
	p.srv = &http.Server{Handler: mux}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *payment) close() { p.srv.Close() }

func (p *payment) charge(w http.ResponseWriter, r *http.Request) {
	var in worker.ChargeInput
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil || in.Intent == "" {
		http.Error(w, fmt.Sprintf("want {\"intent\":…,\"amount\":…}: %v", err), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.n++
	c := worker.Charge{ID: fmt.Sprintf("ch_%d", p.n), Intent: in.Intent, Amount: in.Amount}
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
