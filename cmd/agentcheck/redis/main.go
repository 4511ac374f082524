// Command redis is agentcheck with the Redis journal linked in, for
// -downstream middleware -server-store redis: the idempotency middleware
// of the checker's downstream on a Redis or Valkey server, in a key prefix
// of its own that it removes after the run. It is a module of its own
// because agentcheck belongs to the core module (its fault check runs with
// the core's tests), which requires no Redis client. Its flags,
// output and exit codes are agentcheck's (go doc ./cmd/agentcheck):
//
//	AGENTONCE_REDIS_URL=redis://127.0.0.1:6379/0 \
//	  go run ./cmd/agentcheck/redis -downstream middleware -server-store redis
package main

import (
	"context"
	"fmt"
	"net/url"
	"os"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/cli"
	_ "github.com/agentonce/agentonce/journal/redis" // redis:// journals
)

func main() {
	cli.DropRedis = dropPrefix
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}

// dropPrefix removes every key of the journal at location (whose prefix
// parameter names it; journal/redis puts its keys under "{prefix}:").
func dropPrefix(ctx context.Context, location string) error {
	u, err := url.Parse(location)
	if err != nil {
		return err
	}
	q := u.Query()
	prefix := q.Get("prefix")
	if prefix == "" {
		return fmt.Errorf("%s: no prefix parameter: refusing to remove every journal key", location)
	}
	q.Del("prefix")
	u.RawQuery = q.Encode()
	o, err := goredis.ParseURL(u.String())
	if err != nil {
		return err
	}
	c := goredis.NewClient(o)
	defer c.Close()
	it := c.Scan(ctx, 0, "{"+prefix+"}:*", 500).Iterator()
	var batch []string
	for it.Next(ctx) {
		if batch = append(batch, it.Val()); len(batch) == 500 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return c.Unlink(ctx, batch...).Err()
	}
	return nil
}
