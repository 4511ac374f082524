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
// a person when its key reached the middleware again once the dead
// owner's lease was over, as never asked again when it came only while
// the key was held or not past the middleware; one Reconcile settled
// counts as settled.
func TestCountServerUnknowns(t *testing.T) {
	ctx := context.Background()
	store := memory.New(nil)
	defer store.Close()
	begin := func(httpKey string) (uuid.UUID, uint64, journal.Record) {
		key := uuid.New()
		res, err := store.Begin(ctx, journal.BeginRequest{Key: key, Intent: keyderive.Intent{Tenant: "t", Session: httpKey, Tool: "POST /act"},
			Effect: journal.Keyed, Owner: "server.1", AttemptID: "a", LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return key, res.Token, res.Record
	}
	_, _, asked := begin("asked")
	_, _, early := begin("asked-while-held")
	settled, token, _ := begin("settled")
	if _, err := store.Complete(ctx, journal.Completion{Key: settled, Token: token, State: journal.StateSucceeded,
		Output: []byte(`{}`), ErrorClass: idempotency.ClassReconciled}); err != nil {
		t.Fatal(err)
	}
	kill := asked.Attempts[0].Start.Add(time.Millisecond).UnixNano()
	free := asked.Lease.Expires.UnixNano() + 1 // the dead owner's lease is over
	history := []Event{
		{T: kill, Ev: EvProc, Proc: "runner", Subject: "downstream", Note: "kill server.1 pid 1"},
		{T: kill + 1, Ev: EvResponse, Proc: "downstream", Key: "asked-while-held", Code: 409, Note: "middleware answered 409 in-flight; delivered"},
		{T: free, Ev: EvResponse, Proc: "downstream", Key: "asked", Code: 500, Note: "middleware answered 500 outcome-unknown; delivered"},
		{T: free, Ev: EvResponse, Proc: "downstream", Key: "asked-while-held", Code: 417, Note: "refused before the middleware; delivered"},
		{T: free, Ev: EvReconcile, Proc: "downstream", Key: "settled", Note: "happened"},
	}
	if early.Lease.Expires.UnixNano() <= kill+1 {
		t.Fatalf("the second record's lease ended before its 409")
	}
	s, err := countServerUnknowns(ctx, store, true, history)
	if err != nil {
		t.Fatal(err)
	}
	if s.Settled != 1 || s.Unsettled != 1 || s.NotAsked != 1 || s.Happened != 1 || s.Share() != 0.5 {
		t.Errorf("countServerUnknowns = %+v, share %.2f; want 1 settled, 1 unsettled, 1 not asked, 1 happened, share 0.50", *s, s.Share())
	}
}
