package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
)

// TestRedisJournal: agentctl reads a Redis journal like the others: an
// export of a bbolt journal imported into a new Redis prefix lists, shows
// and exports the same records, and resolve settles one there; a prefix
// with no journal is "no journal" (exit 3), never a new one.
func TestRedisJournal(t *testing.T) {
	u := os.Getenv("AGENTONCE_REDIS_URL")
	if u == "" {
		if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
			t.Fatal("AGENTONCE_REQUIRE_REDIS is set but AGENTONCE_REDIS_URL is empty")
		}
		t.Skip("AGENTONCE_REDIS_URL not set")
	}
	prefix := "agentctl-test-" + uuid.NewString()
	loc := u + "?prefix=" + prefix
	t.Cleanup(func() {
		o, err := goredis.ParseURL(u)
		if err != nil {
			return
		}
		c := goredis.NewClient(o)
		defer c.Close()
		ctx := context.Background()
		for it := c.Scan(ctx, 0, "{"+prefix+"}:*", 1000).Iterator(); it.Next(ctx); {
			c.Del(ctx, it.Val())
		}
	})

	if r := agentctl(t, false, "ls", "--journal", loc); r.code != exitNoJournal {
		t.Fatalf("ls on an empty prefix = %d, %q; want %d (no journal)", r.code, r.stderr, exitNoJournal)
	}
	fx := buildFixture(t)
	exp := exportOf(t, fx.path)
	in := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(in, []byte(exp), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := agentctl(t, false, "import", in, "--journal", loc, "--create"); r.code != 0 {
		t.Fatalf("import into Redis = %d, %q", r.code, r.stderr)
	}
	if got := exportOf(t, loc); got != exp {
		t.Errorf("export of the Redis journal differs from the bbolt one:\n%s\n---\n%s", got, exp)
	}
	r := agentctl(t, false, "ls", "--journal", loc)
	if r.code != 0 || strings.Count(r.stdout, "\n") < fixtureSize {
		t.Errorf("ls on Redis = %d, %q, %q; want the %d records", r.code, r.stdout, r.stderr, fixtureSize)
	}
	key := keyOfLine(strings.Split(exp, "\n")[1])
	if r := agentctl(t, false, "show", key, "--journal", loc); r.code != 0 || !strings.Contains(r.stdout, key) {
		t.Errorf("show on Redis = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}

// TestIsRedisURL: a Redis location names one server or a cluster; other
// schemes are not Redis.
func TestIsRedisURL(t *testing.T) {
	for loc, want := range map[string]bool{
		"redis://127.0.0.1:6379/0": true, "rediss://h:6380": true, "redis+cluster://h:7000?addr=h:7001": true,
		"REDISS+CLUSTER://h:7000": true, "postgres://h/db": false, "redis.journal": false, "rediscluster://h": false,
	} {
		if got := isRedisURL(loc); got != want {
			t.Errorf("isRedisURL(%q) = %v; want %v", loc, got, want)
		}
	}
}
