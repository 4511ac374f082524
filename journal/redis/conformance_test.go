package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/redis"
)

// URLEnv names the server the tests use; without it they skip.
const URLEnv = "AGENTONCE_REDIS_URL"

func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		t.Skip(URLEnv + " is not set: the Redis tests need a server (e.g. redis://127.0.0.1:6399/0 with appendfsync always; .ci/run starts one)")
	}
	return u
}

// prefix returns a key prefix of the test's own, its keys deleted when the
// test ends.
func prefix(t *testing.T, url string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "agentonce-test-" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		o, _ := goredis.ParseURL(url)
		c := goredis.NewClient(o)
		defer c.Close()
		ctx := context.Background()
		it := c.Scan(ctx, 0, p+"*", 512).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
	})
	return p
}

func TestConformance(t *testing.T) {
	url := serverURL(t)
	journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store {
		s, err := redis.Open(context.Background(), url, &redis.Options{Journal: opts, Prefix: prefix(t, url)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// The prefix can travel in the location, as journal.Open receives it.
func TestOpenLocationPrefix(t *testing.T) {
	url := serverURL(t)
	p := prefix(t, url)
	s, err := journal.Open(context.Background(), url+"?prefix="+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := s.Namespace()
	s.Close()
	s2, err := redis.Open(context.Background(), url, &redis.Options{Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Namespace() != ns {
		t.Errorf("namespace under prefix %q = %s through Options, %s through the URL; want the same journal", p, s2.Namespace(), ns)
	}
}
