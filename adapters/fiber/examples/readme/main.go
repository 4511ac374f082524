// Command readme is Fiber's quickstart app with its POST route protected
// by agentonce's Idempotency-Key middleware. It sends itself the same
// charge twice, as a client retrying after a lost answer would, with
// app.Test (no port, no network): the card is charged once, and the retry
// is answered from the journal. Run it again: nothing is charged.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/gofiber/fiber/v3"

	fiberonce "github.com/agentonce/agentonce/adapters/fiber"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
)

func main() {
	// agentonce: a journal and the middleware on it.
	store, err := journal.Open(context.Background(), "server.journal", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}

	app := fiber.New()
	app.Use(fiberonce.New(m))
	charges := 0 // the side effect; a real handler would charge a card
	app.Post("/charges", func(c fiber.Ctx) error {
		charges++
		return c.JSON(fiber.Map{"id": fmt.Sprint("ch_", charges), "status": "succeeded"})
	})

	// A server would call app.Listen(":3000"); here the client's request
	// and its retry go through app.Test.
	for range 2 {
		req := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"order":"A-1001","cents":4900}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-A-1001")
		resp, err := app.Test(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d Idempotent-Replayed=%q %s\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), body)
	}
	fmt.Println("charges made by this run:", charges)
}
