package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness/downstream"
)

// This file is the outside world the agent acts on: a small SaaS on a
// loopback server with three APIs, each behind an agentoncetest.Downstream
// that counts the side effects really performed and keeps its counts (and
// stored responses) in a state file next to the journal, so that a crash
// of this process does not reset them.
//
//	POST /charges                 payment API; honours Idempotency-Key (Stripe-like)
//	POST /emails                  mail API; no protection: every request sends a mail (X-Agentonce-Key is its reference)
//	GET  /emails/{ref}            mail API: was the mail with this reference sent?
//	GET  /customers/{id}          CRM read
//	PUT  /customers/{id}/address  CRM upsert; naturally idempotent, no key needed

// api is the running fake SaaS.
type api struct {
	srv       *httptest.Server
	charges   *agentoncetest.Downstream
	emails    *agentoncetest.Downstream
	addresses *agentoncetest.Downstream
}

// customers is the CRM's read-only data.
var customers = map[string]map[string]string{
	"8812": {"id": "8812", "name": "Ana Lima", "email": "ana@example.com"},
}

// startAPI starts the fake SaaS with its state in dir.
func startAPI(dir string) (*api, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	a := &api{}
	var err error
	a.charges, err = agentoncetest.NewDownstream(http.HandlerFunc(chargeHandler),
		&agentoncetest.DownstreamOptions{StateFile: filepath.Join(dir, "charges.json")})
	if err != nil {
		return nil, err
	}
	mail := &mailer{}
	a.emails, err = agentoncetest.NewDownstream(mail.routes(), &agentoncetest.DownstreamOptions{
		StateFile:   filepath.Join(dir, "emails.json"),
		Passthrough: true, // a mail API that sends whatever it is given
		// An Unkeyed tool's key travels in its own header, one that does not
		// let net/http resend the POST (see downstream.Transport).
		KeyHeader: downstream.DefaultUnkeyedKeyHeader,
	})
	if err != nil {
		return nil, err
	}
	mail.sent = a.emails.Effects // the outbox is the downstream's own record
	a.addresses, err = agentoncetest.NewDownstream(crmRoutes(), &agentoncetest.DownstreamOptions{
		StateFile:   filepath.Join(dir, "addresses.json"),
		Passthrough: true, // a plain upsert: running it twice changes nothing
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charges", a.charges)
	mux.Handle("/emails", a.emails)
	mux.Handle("/emails/", a.emails)
	mux.Handle("/customers/", a.addresses)
	a.srv = httptest.NewServer(mux)
	return a, nil
}

func (a *api) close() { a.srv.Close() }

// sideEffects counts what really happened: every charge and every mail is
// one effect; an address upsert is one effect per intent however often it
// ran (that is what naturally idempotent means).
func (a *api) sideEffects() int {
	return a.charges.TotalEffects() + a.emails.TotalEffects() + a.addresses.Keys()
}

// duplicates counts effects that happened twice for one intent: a second
// charge or a second mail for the same key.
func (a *api) duplicates() int {
	return a.charges.Duplicates() + a.emails.Duplicates()
}

func chargeHandler(w http.ResponseWriter, r *http.Request) {
	var in chargeInput
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.AmountCents <= 0 {
		http.Error(w, `{"error":"invalid charge"}`, http.StatusBadRequest)
		return
	}
	// The charge id is derived from the key so that it is the same in the
	// stored response whichever process made it.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(chargeOutput{
		ID: "ch_" + shortHash(r.Header.Get("Idempotency-Key")), Order: in.Order,
		AmountCents: in.AmountCents, Currency: in.Currency, Status: "succeeded",
	})
}

// mailer sends mail with no idempotency of its own, and can say whether a
// mail with a given reference went out.
type mailer struct {
	sent func(ref string) int
}

func (m *mailer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /emails", func(w http.ResponseWriter, r *http.Request) {
		ref := r.Header.Get(downstream.DefaultUnkeyedKeyHeader) // kept as a reference; not enforced
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":"msg_%s","status":"sent"}`, shortHash(ref))
	})
	mux.HandleFunc("GET /emails/{ref}", func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("ref")
		if m.sent(ref) == 0 {
			http.Error(w, `{"error":"no such message"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%s","status":"sent"}`, shortHash(ref))
	})
	return mux
}

func crmRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /customers/{id}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := customers[r.PathValue("id")]
		if !ok {
			http.Error(w, `{"error":"no such customer"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c)
	})
	mux.HandleFunc("PUT /customers/{id}/address", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var in addressInput
		if _, ok := customers[id]; !ok {
			http.Error(w, `{"error":"no such customer"}`, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Address == "" {
			http.Error(w, `{"error":"invalid address"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"customer": id, "address": in.Address})
	})
	return mux
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}
