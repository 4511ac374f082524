package redis_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// redisURL returns AGENTONCE_REDIS_URL, skipping the test without it
// (failing it under AGENTONCE_REQUIRE_REDIS, as CI runs).
func redisURL(t testing.TB) string {
	u := os.Getenv("AGENTONCE_REDIS_URL")
	if u == "" {
		if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
			t.Fatal("AGENTONCE_REQUIRE_REDIS is set but AGENTONCE_REDIS_URL is empty")
		}
		t.Skip("AGENTONCE_REDIS_URL not set")
	}
	return u
}

// client is a client of the test server, closed with the test.
func client(t testing.TB) goredis.UniversalClient {
	o, err := goredis.ParseURL(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prefix is a prefix of the test's own, whose keys are deleted with it.
func prefix(t testing.TB, c goredis.UniversalClient) string {
	p := "test-" + uuid.NewString()
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "{"+p+"}:*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}

func openStore(t testing.TB, c goredis.UniversalClient, p string, opts *journal.Options) *redisjournal.Store {
	o := &redisjournal.Options{Prefix: p, Journal: *cmp.Or(opts, new(journal.Options))}
	s, err := redisjournal.New(context.Background(), c, o)
	if err != nil {
		t.Fatalf("redis.New: %v", err)
	}
	return s
}

// TestConformance runs the journal conformance suite on the Redis server,
// each subtest under a prefix of its own.
func TestConformance(t *testing.T) {
	c := client(t)
	journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store {
		return openStore(t, c, prefix(t, c), opts)
	})
}

// TestReopen: a second store on the same prefix sees the namespace and the
// records of the first, and a different Namespace is refused.
func TestReopen(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	a := openStore(t, c, p, nil)
	key := uuid.New()
	if _, err := a.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o", AttemptID: "a1", Durable: true}); err != nil {
		t.Fatal(err)
	}
	b := openStore(t, c, p, nil)
	if b.Namespace() != a.Namespace() {
		t.Errorf("reopened Namespace() = %s; want %s", b.Namespace(), a.Namespace())
	}
	if r, err := b.Get(ctx, key); err != nil || r.State != journal.StatePending {
		t.Errorf("reopened Get = %v, %v; want the pending record", r.State, err)
	}
	_, err := redisjournal.New(ctx, c, &redisjournal.Options{Prefix: p, Journal: journal.Options{Namespace: uuid.New()}})
	if !errors.Is(err, journal.ErrNamespaceMismatch) {
		t.Errorf("New with another Namespace: %v; want ErrNamespaceMismatch", err)
	}
	_, err = redisjournal.New(ctx, c, &redisjournal.Options{Prefix: p + "-none", Journal: journal.Options{ReadOnly: true}})
	if !errors.Is(err, journal.ErrNoJournal) {
		t.Errorf("New read-only on an empty prefix: %v; want ErrNoJournal", err)
	}
}

// TestOpenByURL: journal.Open finds the store by its scheme.
func TestOpenByURL(t *testing.T) {
	s, err := journal.Open(context.Background(), redisURL(t), nil)
	if err != nil {
		t.Fatalf("journal.Open(redis URL): %v", err)
	}
	defer s.Close()
	if _, ok := s.(*redisjournal.Store); !ok {
		t.Errorf("journal.Open(redis URL) = %T; want *redis.Store", s)
	}
}

// TestCorruptRecord: a record whose bytes were changed on the server is an
// error naming the key, never an answer.
func TestCorruptRecord(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	s := openStore(t, c, p, nil)
	key := uuid.New()
	if _, err := s.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o", AttemptID: "a1", Durable: true}); err != nil {
		t.Fatal(err)
	}
	rk := "{" + p + "}:r:" + key.String()
	b, err := c.Get(ctx, rk).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	c.Set(ctx, rk, b, 0)
	if _, err := s.Get(ctx, key); !errors.Is(err, journal.ErrCorrupt) {
		t.Errorf("Get of a damaged record: %v; want ErrCorrupt", err)
	}
	if _, err := s.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o2", AttemptID: "a2"}); !errors.Is(err, journal.ErrCorrupt) {
		t.Errorf("Begin on a damaged record: %v; want ErrCorrupt", err)
	}
}
