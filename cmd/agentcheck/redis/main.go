// Command redis is agentcheck with the Redis journal linked in, for
// -store redis (the agents' journal) and -downstream middleware
// -server-store redis (the idempotency middleware's), each in a key prefix
// of its own on a Redis or Valkey server or cluster, removed after the
// run. It is a module of its own because agentcheck belongs to the core
// module (its fault check runs with the core's tests), which requires no
// Redis client. Its flags, output and exit codes are agentcheck's (go doc
// ./cmd/agentcheck):
//
//	AGENTONCE_REDIS_URL=redis://127.0.0.1:6379/0 \
//	  go run ./cmd/agentcheck/redis -store redis
//	go run ./cmd/agentcheck/redis -store redis \
//	  -redis 'redis+cluster://127.0.0.1:7000/?addr=127.0.0.1:7001&replicas=1'
package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/cli"
	_ "github.com/agentonce/agentonce/journal/redis" // redis:// journals
)

func main() {
	cli.DropRedis = dropPrefix
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}

// dropPrefix removes every key of the journal at location, whose prefix
// parameter names it. journal/redis keeps a journal on one server under
// "{prefix}:"; on a cluster (redis+cluster://) its meta hash stays there
// and its records, indexes and guard sets spread over the 64 hash tags
// "{prefix:00}:" to "{prefix:3f}:", which every master is scanned for.
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
	q.Del("replicas")
	u.RawQuery = q.Encode()
	p := globEscape(prefix)
	patterns := []string{"{" + p + "}:*", "{" + p + ":[0-3][0-9a-f]}:*"}
	scheme, cluster := strings.CutSuffix(u.Scheme, "+cluster")
	if !cluster {
		o, err := goredis.ParseURL(u.String())
		if err != nil {
			return err
		}
		c := goredis.NewClient(o)
		defer c.Close()
		return unlinkMatching(ctx, c, c, patterns)
	}
	u.Scheme = scheme
	o, err := goredis.ParseClusterURL(u.String())
	if err != nil {
		return err
	}
	c := goredis.NewClusterClient(o)
	defer c.Close()
	return c.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		return unlinkMatching(ctx, m, c, patterns)
	})
}

// unlinkMatching scans node for the keys matching patterns and removes
// them through c, one UNLINK per key in pipelines of 500: on a cluster
// the keys of one batch lie in many slots, which one UNLINK refuses.
func unlinkMatching(ctx context.Context, node *goredis.Client, c goredis.Cmdable, patterns []string) error {
	for _, pattern := range patterns {
		it := node.Scan(ctx, 0, pattern, 500).Iterator()
		var batch []string
		flush := func() error {
			_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, k := range batch {
					p.Unlink(ctx, k)
				}
				return nil
			})
			batch = batch[:0]
			return err
		}
		for it.Next(ctx) {
			if batch = append(batch, it.Val()); len(batch) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		if len(batch) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
