package fiberonce_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofiber/fiber/v3"

	fiberonce "github.com/agentonce/agentonce/adapters/fiber"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
)

// A Fiber charge route behind the middleware: the retry is replayed from
// the journal and the card is charged once.
func Example() {
	dir, _ := os.MkdirTemp("", "fiberonce-example")
	defer os.RemoveAll(dir)
	store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	charges := 0
	app := fiber.New()
	app.Use(fiberonce.New(m))
	app.Post("/v1/charges", func(c fiber.Ctx) error {
		charges++
		return c.JSON(fiber.Map{"id": fmt.Sprintf("ch_%d", charges)})
	})
	for range 2 {
		req := httptest.NewRequest("POST", "/v1/charges", strings.NewReader(`{"amount":4900}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-55102")
		resp, err := app.Test(req)
		if err != nil {
			log.Fatal(err)
		}
		b := new(strings.Builder)
		io.Copy(b, resp.Body)
		resp.Body.Close()
		fmt.Printf("%d replayed=%q %s\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b)
	}
	fmt.Println("charges:", charges)
	// Output:
	// 200 replayed="" {"id":"ch_1"}
	// 200 replayed="true" {"id":"ch_1"}
	// charges: 1
}
