package fakeshop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Shop is a payment and mail API on loopback. POST /charges with
// {"amount": N, "currency": "usd"} charges a card; POST /emails with
// {"to": "…"} sends a mail. Every effect is counted with the agentonce
// key its request carried, so a test or example can count the side effects
// it really caused and the duplicates among them. It honours no
// idempotency key on purpose: a duplicate delivery is a duplicate effect.
// It is safe for concurrent use.
type Shop struct {
	*httptest.Server

	mu      sync.Mutex // guards charges and emails
	charges []Effect
	emails  []Effect
}

// Effect is one charge or mail the Shop made.
type Effect struct {
	ID       string `json:"id"`
	Amount   int    `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	To       string `json:"to,omitempty"`
	// Key is the agentonce key the request carried (Idempotency-Key, or
	// X-Agentonce-Key for an Unkeyed tool).
	Key string `json:"-"`
}

// NewShop starts a Shop. Close it when done.
func NewShop() *Shop {
	s := &Shop{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", func(w http.ResponseWriter, r *http.Request) {
		s.effect(w, r, &s.charges, "ch", func(e Effect) bool { return e.Amount > 0 && e.Currency != "" })
	})
	mux.HandleFunc("POST /emails", func(w http.ResponseWriter, r *http.Request) {
		s.effect(w, r, &s.emails, "em", func(e Effect) bool { return e.To != "" })
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// Charges returns the charges made so far, in order.
func (s *Shop) Charges() []Effect { return s.list(&s.charges) }

// Emails returns the mails sent so far, in order.
func (s *Shop) Emails() []Effect { return s.list(&s.emails) }

// Duplicates counts the effects beyond the first for each key: the
// duplicate side effects.
func (s *Shop) Duplicates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	n := 0
	for _, e := range append(append([]Effect(nil), s.charges...), s.emails...) {
		if seen[e.Key] {
			n++
		}
		seen[e.Key] = true
	}
	return n
}

func (s *Shop) list(l *[]Effect) []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), (*l)...)
}

func (s *Shop) effect(w http.ResponseWriter, r *http.Request, l *[]Effect, prefix string, valid func(Effect) bool) {
	var e Effect
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil || !valid(e) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid request: want a positive amount and a currency, or a recipient"}`)
		return
	}
	e.Key = r.Header.Get("Idempotency-Key")
	if e.Key == "" {
		e.Key = r.Header.Get("X-Agentonce-Key")
	}
	s.mu.Lock()
	e.ID = fmt.Sprintf("%s_%d", prefix, len(*l)+1)
	*l = append(*l, e)
	s.mu.Unlock()
	json.NewEncoder(w).Encode(e)
}
