package agentonce_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// An agent opens its journal file once, registers its tools and sends every
// tool call through the Harness: a re-issued call is answered from the
// journal, across restarts too.
func Example() {
	dir, _ := os.MkdirTemp("", "agentonce-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.journal")
	charges := 0
	charge := harness.Tool{Name: "charge_card", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			charges++
			return json.RawMessage(fmt.Sprintf(`{"charge":"ch_%d"}`, charges)), nil
		}}
	call := harness.ToolCall{Tenant: "acme", Session: "chat-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"customer":"8812","amount":4900}`)}

	for range 2 { // the agent restarts between the model's two identical calls
		h, err := agentonce.Open(context.Background(), path, nil)
		if err != nil {
			log.Fatal(err)
		}
		if err := h.Register(charge); err != nil {
			log.Fatal(err)
		}
		res := h.Call(context.Background(), call)
		fmt.Println(res.Status, res.Source, res.ForModel())
		if err := h.Close(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("charges:", charges)
	// Output:
	// succeeded executed {"charge":"ch_1"}
	// succeeded replayed {"charge":"ch_1"}
	// charges: 1
}

// A server opens its journal with OpenJournal and puts the idempotency
// middleware on it; while it runs, agentctl reaches the bbolt file through
// the socket beside it (agentctl queue, agentctl resolve).
func ExampleOpenJournal() {
	dir, _ := os.MkdirTemp("", "agentonce-server")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "server.journal")
	store, closeJournal, err := agentonce.OpenJournal(context.Background(), path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer closeJournal()
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	charges := 0
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, charges)
	})))

	for range 2 { // the client retries with the same key
		req := httptest.NewRequest("POST", "/v1/charges", strings.NewReader(`{"amount":4900}`))
		req.Header.Set("Idempotency-Key", "order-77")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body, "replayed:", rec.Header().Get("Idempotent-Replayed") == "true")
	}
	_, err = os.Stat(path + ".sock")
	fmt.Println("charges:", charges, "agentctl socket:", err == nil)
	// Output:
	// 201 {"charge":"ch_1"} replayed: false
	// 201 {"charge":"ch_1"} replayed: true
	// charges: 1 agentctl socket: true
}
