package redis_test

import (
	"context"
	"log"

	"github.com/agentonce/agentonce"
	_ "github.com/agentonce/agentonce/journal/redis" // registers redis:// and rediss://
)

// An agent whose journal is a Redis or Valkey server with appendfsync
// always: the harness opens it by URL once the package is imported.
func Example() {
	ctx := context.Background()
	h, err := agentonce.Open(ctx, "redis://127.0.0.1:6379/0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
}
