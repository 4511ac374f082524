package check

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/keyderive"
)

// TestCountServerUnknowns: a record a kill left pending counts as left to
// a person when its key was asked about again after the kill, as never
// asked again otherwise; one Reconcile settled counts as settled.
func TestCountServerUnknowns(t *testing.T) {
	ctx := context.Background()
	store := memory.New(nil)
	defer store.Close()
	begin := func(httpKey string) (uuid.UUID, uint64, time.Time) {
		key := uuid.New()
		res, err := store.Begin(ctx, journal.BeginRequest{Key: key, Intent: keyderive.Intent{Tenant: "t", Session: httpKey, Tool: "POST /act"},
			Effect: journal.Keyed, Owner: "server.1", AttemptID: "a", LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return key, res.Token, res.Record.Attempts[0].Start
	}
	_, _, start := begin("asked")
	begin("not-asked")
	settled, token, _ := begin("settled")
	if _, err := store.Complete(ctx, journal.Completion{Key: settled, Token: token, State: journal.StateSucceeded,
		Output: []byte(`{}`), ErrorClass: idempotency.ClassReconciled}); err != nil {
		t.Fatal(err)
	}
	kill := start.Add(time.Millisecond).UnixNano()
	history := []Event{
		{T: kill, Ev: EvProc, Proc: "runner", Subject: "downstream", Note: "kill server.1 pid 1"},
		{T: kill + 1, Ev: EvResponse, Proc: "downstream", Key: "asked", Code: 409, Note: "middleware answered 409 in-flight; delivered"},
		{T: kill + 2, Ev: EvResponse, Proc: "downstream", Key: "not-asked", Code: 417, Note: "refused before the middleware; delivered"},
		{T: kill + 3, Ev: EvReconcile, Proc: "downstream", Key: "settled", Note: "happened"},
	}
	s, err := countServerUnknowns(ctx, store, true, history)
	if err != nil {
		t.Fatal(err)
	}
	if s.Settled != 1 || s.Unsettled != 1 || s.NotAsked != 1 || s.Happened != 1 || s.Share() != 0.5 {
		t.Errorf("countServerUnknowns = %+v, share %.2f; want 1 settled, 1 unsettled, 1 not asked, 1 happened, share 0.50", *s, s.Share())
	}
}
