package redis_test

import (
	"context"
	"log"
	"net/http"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/redis" // redis:// locations
)

// The idempotency middleware on a Redis journal, opened by location.
func Example() {
	store, err := journal.Open(context.Background(), "redis://127.0.0.1:6379/0?prefix=payments:", nil)
	if err != nil {
		log.Fatal(err) // e.g. ErrNotDurable: the server does not fsync every write
	}
	defer store.Close()
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
