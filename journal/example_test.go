package journal_test

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/keyderive"
)

// One intent through the journal: begun, completed, then replayed.
func Example() {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()

	input := []byte(`{"amount":"49.00","customer":8812}`)
	req := journal.BeginRequest{
		Key:         uuid.NewSHA1(s.Namespace(), input), // the harness derives it with keyderive
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge"},
		Fingerprint: keyderive.FingerprintOf(input),
		Owner:       "agent-1",
		AttemptID:   "att-1",
		LeaseTTL:    time.Minute,
		Durable:     true,
	}
	res, _ := s.Begin(ctx, req)
	fmt.Println(res.Outcome == journal.Started, res.Record.State)

	rec, _ := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`{"charge":"ch_1"}`)})
	fmt.Println(rec.State, string(rec.Output))

	// The model repeats the call: answered from the journal.
	again, _ := s.Begin(ctx, req)
	fmt.Println(again.Outcome == journal.Answered, string(again.Record.Output))
	// Output:
	// true pending
	// succeeded {"charge":"ch_1"}
	// true {"charge":"ch_1"}
}
