package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
	"github.com/agentonce/agentonce/keyderive"
)

// TestMemoryPerRecord measures the server memory one settled record of
// an Unkeyed call takes (a 60-byte input, an 80-byte output, with its
// index entries), the figure docs/sizing.md sizes a Redis journal by:
//
//	AGENTONCE_SIZING=20000 go test -run TestMemoryPerRecord -v ./journal/redis
//
// It runs with AGENTONCE_SIZING set to the number of records, and fails
// above 2 KiB a record: a layout that kept a record twice would.
func TestMemoryPerRecord(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AGENTONCE_SIZING"))
	if n <= 0 {
		t.Skip("AGENTONCE_SIZING=N measures the memory of N records")
	}
	ctx := context.Background()
	prefix := "sizing-" + uuid.NewString()
	s, err := redisjournal.Open(ctx, redisURL(t)+"?prefix="+prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := client(t)
	t.Cleanup(func() {
		var keys []string
		for it := c.Scan(ctx, 0, "{"+prefix+"}*", 1000).Iterator(); it.Next(ctx); {
			keys = append(keys, it.Val())
		}
		for i := 0; i < len(keys); i += 500 {
			c.Del(ctx, keys[i:min(i+500, len(keys))]...)
		}
	})
	used := func() int64 {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				m, _ := strconv.ParseInt(v, 10, 64)
				return m
			}
		}
		t.Fatal("INFO memory has no used_memory")
		return 0
	}
	before := used()
	for i := range n {
		key := uuid.New()
		in := []byte(fmt.Sprintf(`{"amount":%d,"customer":"cus_%06d","currency":"usd"}`, 1000+i, i))
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Fingerprint: keyderive.FingerprintOf(in), Effect: journal.Unkeyed, Input: in,
			Intent: keyderive.Intent{Tenant: "acme", Session: "sess-" + strconv.Itoa(i/20), Turn: strconv.Itoa(i % 20), Tool: "charge"},
			Owner:  "host/123/abcd", AttemptID: uuid.NewString(), Durable: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded,
			Output: []byte(`{"id":"ch_3Nf8aL2eZvKYlo2C1a2b3c4d","status":"succeeded","amount":1000}`)}); err != nil {
			t.Fatal(err)
		}
	}
	per := (used() - before) / int64(n)
	t.Logf("%d records: %d bytes of server memory a record", n, per)
	if per > 2048 {
		t.Errorf("a record takes %d bytes of server memory; want at most 2 KiB", per)
	}
}
