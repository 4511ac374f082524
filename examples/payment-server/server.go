package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// ledger is the payment server's own database: one line per charge,
// appended and fsynced before the charge is answered, so that the charges
// really made are counted even across a SIGKILL. It is safe for concurrent
// use.
type ledger struct {
	mu    sync.Mutex // guards f and lines
	f     *os.File
	lines []string
}

func openLedger(path string) (*ledger, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &ledger{f: f}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l.lines = append(l.lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return l, nil
}

// charge records one charge and returns its id.
func (l *ledger) charge(key, amount, currency string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := "ch_" + strconv.Itoa(len(l.lines)+1)
	line := id + "\t" + key + "\t" + amount + "\t" + currency
	if _, err := l.f.WriteString(line + "\n"); err != nil {
		return "", err
	}
	if err := l.f.Sync(); err != nil {
		return "", err
	}
	l.lines = append(l.lines, line)
	return id, nil
}

// counts returns how many charges were made and how many of them repeat an
// idempotency key already charged: the duplicates.
func (l *ledger) counts() (charges, duplicates int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, line := range l.lines {
		f := strings.Split(line, "\t")
		if len(f) > 1 && seen[f[1]] {
			duplicates++
		}
		if len(f) > 1 {
			seen[f[1]] = true
		}
	}
	return len(l.lines), duplicates
}

func (l *ledger) close() error { return l.f.Close() }

// serverOptions shapes the server for the demo and the tests.
type serverOptions struct {
	// slow, when set, is called after a charge is committed and before it
	// is answered: the window in which a SIGKILL leaves an unknown outcome.
	slow func()
	// leaseTTL is the middleware's lease (zero: its default).
	leaseTTL time.Duration
}

// newServer is the payment API: POST /v1/charges (Stripe's form fields
// amount and currency, or the same as JSON) behind the idempotency
// middleware, scoped by the API key in Authorization; GET /ledger counts
// what was charged.
func newServer(store journal.Store, l *ledger, so serverOptions) (http.Handler, error) {
	m, err := idempotency.New(store, &idempotency.Options{
		Tenant: func(r *http.Request) (string, error) {
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || key == "" {
				return "", fmt.Errorf("no API key: send Authorization: Bearer sk_…")
			}
			return key, nil
		},
		Require:  func(r *http.Request) bool { return true },
		Volatile: map[string][]string{"POST /v1/charges": {"metadata[trace_id]", "trace_id"}},
		LeaseTTL: so.leaseTTL,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		amount, currency := chargeFields(r)
		if amount == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{
				"type": "invalid_request_error", "message": "Missing required param: amount."}})
			return
		}
		key := r.Header.Get(idempotency.KeyHeader) + r.Header.Get(idempotency.AgentonceKeyHeader)
		id, err := l.charge(r.Header.Get("Authorization")+" "+key, amount, currency)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]string{"type": "api_error", "message": err.Error()}})
			return
		}
		if so.slow != nil {
			so.slow()
		}
		n, _ := strconv.ParseInt(amount, 10, 64)
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "charge", "amount": n,
			"currency": currency, "status": "succeeded", "paid": true})
	})))
	mux.HandleFunc("GET /ledger", func(w http.ResponseWriter, r *http.Request) {
		c, d := l.counts()
		writeJSON(w, http.StatusOK, map[string]int{"charges": c, "duplicates": d})
	})
	return mux, nil
}

// chargeFields reads amount and currency from a form or a JSON body.
func chargeFields(r *http.Request) (amount, currency string) {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var in struct {
			Amount   json.Number `json:"amount"`
			Currency string      `json:"currency"`
		}
		_ = json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&in)
		return in.Amount.String(), in.Currency
	}
	return r.FormValue("amount"), r.FormValue("currency")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
