package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

// benchStore opens a store with room for 64 connections and creates, in its
// schema, the baseline table: the same columns and indexes as the records
// table, written with raw SQL.
func benchStore(b *testing.B) (*postgres.Store, string) {
	b.Helper()
	schema := newSchema(b)
	s, err := postgres.Open(context.Background(), pgURL(b), &postgres.Options{Schema: schema, MaxConns: 64})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := s.Pool().Exec(context.Background(), `CREATE TABLE `+q+`.baseline (LIKE `+q+`.records INCLUDING ALL)`); err != nil {
		b.Fatal(err)
	}
	// Warm both up (connections, prepared statements, the new tables'
	// first pages) so that whichever sub-benchmark runs first is not
	// charged for it.
	// 64 at once, so that the pool opens all its connections now.
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if err := beginComplete(context.Background(), s); err != nil {
				b.Error(err)
			}
			if err := rawInsertUpdate(context.Background(), s, q+".baseline"); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return s, q + ".baseline"
}

var (
	benchInput  = []byte(`{"amount":4900,"currency":"USD","customer":"8812"}`)
	benchOutput = []byte(`{"charge":"ch_3Nq8","status":"succeeded"}`)
)

// beginComplete is one new intent through the journal: Begin (durable, as
// for an Unkeyed tool) and Complete.
func beginComplete(ctx context.Context, s *postgres.Store) error {
	key := uuid.New()
	res, err := s.Begin(ctx, journal.BeginRequest{
		Key:         key,
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "charge"},
		Fingerprint: keyderive.FingerprintOf(benchInput),
		Input:       benchInput,
		Owner:       "bench",
		AttemptID:   "attempt-1",
		LeaseTTL:    time.Minute,
		Durable:     true,
	})
	if err != nil {
		return err
	}
	_, err = s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: benchOutput})
	return err
}

// rawInsertUpdate writes the same row with one INSERT and one UPDATE,
// each its own durable transaction: the least any journal could do.
func rawInsertUpdate(ctx context.Context, s *postgres.Store, table string) error {
	key := uuid.New()
	now := time.Now().UnixNano()
	fp := keyderive.FingerprintOf(benchInput)
	_, err := s.Pool().Exec(ctx, `INSERT INTO `+table+` (key, version, tenant, session, turn, tool, discriminator,
		fingerprint, effect, input, state, output, error_class, error_message, attempts, lease_owner, lease_token,
		lease_expires_ns, created_ns, updated_ns, expires_ns)
		VALUES ($1, 1, 'acme', 's-1', '3', 'charge', '', $2, 0, $3, 1, NULL, '', '', $4, 'bench', 1, $5, $6, $6, $7)`,
		key, fp[:], benchInput, `[{"id":"attempt-1","start":`+itoa(now)+`}]`, now+int64(time.Minute), now, now+int64(journal.DefaultTTL))
	if err != nil {
		return err
	}
	_, err = s.Pool().Exec(ctx, `UPDATE `+table+` SET state = 2, output = $2,
		attempts = $3, lease_expires_ns = $4, updated_ns = $4 WHERE key = $1`,
		key, benchOutput, `[{"id":"attempt-1","start":`+itoa(now)+`,"end":`+itoa(now)+`}]`, now)
	return err
}

// BenchmarkBeginComplete measures one new intent, Begin then Complete,
// against a raw INSERT + UPDATE of the same row on the same pool.
func BenchmarkBeginComplete(b *testing.B) {
	ctx := context.Background()
	s, baseline := benchStore(b)
	b.Run("agentonce", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := beginComplete(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rawInsertUpdate(ctx, s, baseline); err != nil {
				b.Fatal(err)
			}
		}
	})
	// On a shared machine the load changes between the two runs above; here
	// each iteration does one of each, so both see the same load, and the
	// ratio is reported directly.
	b.Run("interleaved", func(b *testing.B) {
		var ours, base time.Duration
		for b.Loop() {
			t0 := time.Now()
			if err := beginComplete(ctx, s); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := rawInsertUpdate(ctx, s, baseline); err != nil {
				b.Fatal(err)
			}
			ours, base = ours+t1.Sub(t0), base+time.Since(t1)
		}
		b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "agentonce-ns/op")
		b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
		b.ReportMetric(float64(ours)/float64(base), "x-baseline")
	})
}

// BenchmarkConcurrent64 runs 64 goroutines on distinct intents and reports
// calls/s and the ratio to the sequential rate measured in the same run.
func BenchmarkConcurrent64(b *testing.B) {
	ctx := context.Background()
	s, baseline := benchStore(b)
	for _, bc := range []struct {
		name string
		call func() error
	}{
		{"agentonce", func() error { return beginComplete(ctx, s) }},
		{"baseline", func() error { return rawInsertUpdate(ctx, s, baseline) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			seq := min(max(b.N, 20), 200)
			start := time.Now()
			for range seq {
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
			}
			seqRate := float64(seq) / time.Since(start).Seconds()

			b.ResetTimer()
			start = time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := bc.call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			rate := float64(b.N) / time.Since(start).Seconds()
			b.ReportMetric(rate, "calls/s")
			b.ReportMetric(rate/seqRate, "x-sequential")
		})
	}
}
