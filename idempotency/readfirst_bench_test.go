package idempotency_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// BenchmarkReadFirst sets, on each store, the read a replay could be
// answered by beside the Begin that answers it anyway: get-settled and
// begin-settled read one settled record (the replay path through Get or
// through Begin), get-absent is the read a new key pays when Get comes
// before Begin. It is the figure behind the middleware's choice of no
// read before Begin.
func BenchmarkReadFirst(b *testing.B) {
	b.Run("bbolt", func(b *testing.B) {
		store, err := journal.Open(context.Background(), filepath.Join(b.TempDir(), "server.journal"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchReadFirst(b, store)
	})
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.URL(b)
		schema := pgtest.Schema(b, "agentonce_idemread_")
		benchReadFirst(b, openPG(b, url, schema))
	})
}

func benchReadFirst(b *testing.B, store journal.Store) {
	ctx := context.Background()
	req := journal.BeginRequest{Key: uuid.New(), Owner: "bench", AttemptID: "a",
		Intent:      keyderive.Intent{Session: nextKey(), Tool: "POST /v1/charges"},
		Fingerprint: keyderive.FingerprintOf([]byte(benchBody)), Effect: journal.Keyed,
		Durable: true, Guard: journal.GuardOff}
	res, err := store.Begin(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token,
		State: journal.StateSucceeded, Output: []byte(benchBody)}); err != nil {
		b.Fatal(err)
	}
	b.Run("get-settled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.Get(ctx, req.Key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("begin-settled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := store.Begin(ctx, req); err != nil || res.Outcome != journal.Answered {
				b.Fatal(res.Outcome, err)
			}
		}
	})
	absent := uuid.New()
	b.Run("get-absent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.Get(ctx, absent); !errors.Is(err, journal.ErrNotFound) {
				b.Fatal(err)
			}
		}
	})
}
