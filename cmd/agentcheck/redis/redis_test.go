package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/checktest"
)

// TestCheckMiddlewareRedis runs agentcheck -downstream middleware
// -server-store redis for 8 s of faults (10–25 s in all), then agentcheck
// -store redis (the agents' journal on Redis) for 15 s, with
// AGENTONCE_LONG=1 and AGENTONCE_REDIS_URL set (.ci/run sets both), and
// fails on any violation.
// It then checks that the runs removed their journals' keys.
func TestCheckMiddlewareRedis(t *testing.T) {
	if os.Getenv("AGENTONCE_LONG") != "1" {
		t.Skip("AGENTONCE_LONG=1 runs the fault checker (.ci/run does)")
	}
	u := os.Getenv("AGENTONCE_REDIS_URL")
	if u == "" {
		if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
			t.Fatal("AGENTONCE_REQUIRE_REDIS is set but AGENTONCE_REDIS_URL is empty")
		}
		t.Skip("AGENTONCE_REDIS_URL is not set")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentcheck-redis")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	hist := filepath.Join(os.TempDir(), "agentcheck-middleware-redis-4.jsonl")
	checktest.Run(t, bin, hist, "-downstream", "middleware", "-server-store", "redis", "-redis", u, "-seed", "4", "-duration", "8s")
	if !t.Failed() {
		os.Remove(hist)
	}
	// The agents' journal on Redis: three workers share it, SIGKILLed
	// as on PostgreSQL.
	hist = filepath.Join(os.TempDir(), "agentcheck-redis-5.jsonl")
	sum := checktest.Run(t, bin, hist, "-store", "redis", "-redis", u, "-seed", "5", "-duration", "15s", "-lease", "1500ms")
	if !t.Failed() {
		os.Remove(hist)
	}
	for _, rep := range sum.Reports {
		t.Logf("seed %d: %d intents, %d calls, %d effects, %d kills; answers %v",
			rep.Seed, rep.Intents, rep.Calls, rep.Effects, rep.Kills, rep.Answers)
	}

	o, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pattern := range []string{"{agentcheck_server_4_*", "{agentcheck_5_*"} {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		if it.Next(ctx) {
			t.Errorf("the run left keys of its journal behind, e.g. %s", it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
}
