package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/agentonce/agentonce/journal/postgres"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

func TestZZProbe(t *testing.T) {
	ctx := context.Background()
	b := &testing.B{}
	_ = b
	s, baseline := benchStoreT(t)
	var tb, tc, ti, tu, ts time.Duration
	n := 200
	for i := range n {
		durable := i%2 == 0
		if !durable {
			t0 := time.Now()
			_, _ = s.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Owner: "x", Durable: false})
			tu += time.Since(t0)
			continue
		}
		key := uuid.New()
		t0 := time.Now()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Intent: keyderive.Intent{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "charge"},
			Fingerprint: keyderive.FingerprintOf(benchInput), Input: benchInput, Owner: "bench", AttemptID: "attempt-1", LeaseTTL: time.Minute, Durable: durable})
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: benchOutput}); err != nil {
			t.Fatal(err)
		}
		t2 := time.Now()
		if err := rawInsertUpdate(ctx, s, baseline); err != nil {
			t.Fatal(err)
		}
		t3 := time.Now()
		if _, err := s.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
		t4 := time.Now()
		tb += t1.Sub(t0)
		tc += t2.Sub(t1)
		ti += t3.Sub(t2)
		ts += t4.Sub(t3)
	}
	n /= 2
	t.Logf("begin %v complete %v raw insert+update %v get %v begin-nondurable %v", tb/time.Duration(n), tc/time.Duration(n), ti/time.Duration(n), ts/time.Duration(n), tu/time.Duration(n))
	_ = tu
}

func benchStoreT(t *testing.T) (*postgres.Store, string) {
	schema := newSchema(t)
	s, err := postgres.Open(context.Background(), pgURL(t), &postgres.Options{Schema: schema, MaxConns: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := s.Pool().Exec(context.Background(), `CREATE TABLE `+q+`.baseline (LIKE `+q+`.records INCLUDING ALL)`); err != nil {
		t.Fatal(err)
	}
	return s, q + ".baseline"
}
