package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Ledger is a payment API on loopback: POST /charges with
// {"amount": N, "currency": "usd"} charges, and every charge is counted,
// so a test or example can count the side effects it really caused. It
// honours no idempotency key on purpose: a duplicate delivery is a
// duplicate charge. It is safe for concurrent use.
type Ledger struct {
	*httptest.Server

	mu      sync.Mutex // guards charges
	charges []Charge
}

// Charge is one charge the Ledger made.
type Charge struct {
	ID       string `json:"charge_id"`
	Amount   int    `json:"amount"`
	Currency string `json:"currency"`
	// Key is the request's Idempotency-Key header.
	Key string `json:"-"`
}

// NewLedger starts a Ledger. Close it when done.
func NewLedger() *Ledger {
	l := &Ledger{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", l.charge)
	l.Server = httptest.NewServer(mux)
	return l
}

// Charges returns the charges made so far, in order.
func (l *Ledger) Charges() []Charge {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Charge(nil), l.charges...)
}

func (l *Ledger) charge(w http.ResponseWriter, r *http.Request) {
	var c Charge
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Amount <= 0 || c.Currency == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"want a positive amount and a currency"}`)
		return
	}
	l.mu.Lock()
	c.ID = fmt.Sprintf("ch_%d", len(l.charges)+1)
	c.Key = r.Header.Get("Idempotency-Key")
	l.charges = append(l.charges, c)
	l.mu.Unlock()
	json.NewEncoder(w).Encode(c)
}
