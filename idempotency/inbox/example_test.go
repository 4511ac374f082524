package inbox_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentonce/agentonce/idempotency/inbox"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
)

// A Stripe webhook endpoint: each event is processed once, however often
// Stripe delivers it.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "inbox-example")
	defer os.RemoveAll(dir)
	store, err := journal.Open(context.Background(), filepath.Join(dir, "inbox.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	const secret = "whsec_example"
	m, err := inbox.New(store, inbox.StripeEvent(secret, 0), nil)
	if err != nil {
		log.Fatal(err)
	}
	processed := 0
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		processed++ // start the agent's work for this event
		w.WriteHeader(http.StatusNoContent)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	event := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	for range 3 { // Stripe redelivers
		req, _ := http.NewRequest("POST", srv.URL+"/webhooks/stripe", strings.NewReader(string(event)))
		req.Header.Set("Stripe-Signature", signStripe(secret, time.Now(), event))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%d replayed=%q\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	fmt.Println("processed:", processed)
	// Output:
	// 204 replayed=""
	// 204 replayed="true"
	// 204 replayed="true"
	// processed: 1
}

// signStripe returns a Stripe-Signature header value for body at t, as
// Stripe signs a delivery: an HMAC-SHA256 of the timestamp, a dot and the
// body, with the endpoint's signing secret.
func signStripe(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
