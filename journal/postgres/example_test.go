package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

// The examples need a PostgreSQL server, so they are compiled but not run
// (they have no Output comment); the tests cover the same paths.

func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("AGENTONCE_PG_URL"), &postgres.Options{Schema: "agentonce"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	input := []byte(`{"amount":4900,"customer":"8812"}`)
	req := journal.BeginRequest{
		Key:         uuid.NewSHA1(s.Namespace(), input), // the harness derives it; see keyderive
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "charge"},
		Fingerprint: keyderive.FingerprintOf(input),
		Owner:       "worker-7",
		AttemptID:   uuid.NewString(),
		LeaseTTL:    time.Minute,
		Durable:     true,
	}
	res, err := s.Begin(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	if res.Outcome == journal.Started {
		// … run the tool, then record what it returned.
		if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token,
			State: journal.StateSucceeded, Output: []byte(`{"charge":"ch_1"}`)}); err != nil {
			log.Fatal(err)
		}
	}
}

func ExampleStore_CompleteInTx() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("AGENTONCE_PG_URL"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	req := journal.BeginRequest{Key: uuid.New(), Owner: "worker-7", AttemptID: "a1", Durable: true,
		Intent: keyderive.Intent{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "credit"}}
	res, err := s.Begin(ctx, req)
	if err != nil || res.Outcome != journal.Started {
		log.Fatal(res.Outcome, err)
	}
	// The credit and the journal's record of it commit together.
	rec, err := s.CompleteInTx(ctx, req.Key, res.Token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		var balance int64
		err := tx.QueryRow(ctx, `UPDATE accounts SET balance = balance + 4900 WHERE id = 8812 RETURNING balance`).Scan(&balance)
		return fmt.Appendf(nil, `{"balance":%d}`, balance), err
	})
	switch {
	case errors.Is(err, postgres.ErrOutcomeUncertain):
		// The connection went during COMMIT: s.Get tells later whether both
		// happened (succeeded) or neither (still pending).
	case err != nil:
		log.Fatal(err) // nothing happened
	default:
		fmt.Println(rec.State)
	}
}

func ExampleIsURL() {
	for _, loc := range []string{"postgres://agent@db.internal/agents", "/var/lib/agent/journal.db"} {
		if postgres.IsURL(loc) {
			fmt.Println("postgres:", loc)
		} else {
			fmt.Println("bbolt:", loc)
		}
	}
	// Output:
	// postgres: postgres://agent@db.internal/agents
	// bbolt: /var/lib/agent/journal.db
}
