package bolt_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// A harness tool whose effect is bolt.InTx on a bbolt journal: a failed
// attempt leaves no row behind, the retry writes exactly one, a re-issue
// is replayed and writes none, and a panic rolls its write back.
func TestHarnessInTx(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "agent.journal"), nil)
	defer s.Close()
	h := harness.New(s, &harness.Options{Retry: &retryclass.Policy{MaxAttempts: 4,
		InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond, MaxElapsed: 5 * time.Second}})
	defer h.Close()
	tries := 0
	credit := bolt.InTx(func(ctx context.Context, tx *bbolt.Tx, in json.RawMessage) (json.RawMessage, error) {
		tries++
		key, _ := downstream.KeyFromContext(ctx)
		b, err := tx.CreateBucketIfNotExists(charges)
		if err != nil {
			return nil, err
		}
		if err := b.Put([]byte(key.String()+"/0"), in); err != nil {
			return nil, err
		}
		switch {
		case string(in) == `{"panic":true}`:
			panic("a bug after the write")
		case tries == 1:
			// Fails after its write: the write must roll back with it.
			return nil, errors.New("read: connection reset by peer")
		}
		return json.RawMessage(`{"credited":true}`), nil
	})
	if err := h.Register(harness.Tool{Name: "credit", Effect: journal.Keyed, InTx: credit},
		harness.Tool{Name: "crash", Effect: journal.Keyed, InTx: credit}); err != nil {
		t.Fatalf("Register(InTx tools) on a bbolt journal = %v", err)
	}
	ctx := context.Background()
	c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "credit", Input: json.RawMessage(`{"amount":4900}`)}
	res := h.Call(ctx, c)
	if !res.OK() || res.Source != harness.Executed || tries != 2 {
		t.Fatalf("Call = %v from %v after %d tries (err %v); want succeeded, executed, 2 tries", res.Status, res.Source, tries, res.Err)
	}
	if n := countCharges(t, s, res.Key); n != 1 {
		t.Fatalf("charges = %d; want 1", n)
	}
	again := h.Call(ctx, c)
	if !again.OK() || again.Source != harness.Replayed || string(again.Output) != `{"credited":true}` || tries != 2 {
		t.Fatalf("re-issue = %v from %v, %s, %d tries; want the replayed output, no new try", again.Status, again.Source, again.Output, tries)
	}
	if n := countCharges(t, s, res.Key); n != 1 {
		t.Fatalf("charges after the re-issue = %d; want 1", n)
	}

	// A panic after the write: the write rolls back with it (what the
	// harness answers: TestHarnessInTxPanicIsFailed).
	p := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "2", Tool: "crash", Input: json.RawMessage(`{"panic":true}`)})
	var pe *harness.PanicError
	if p.OK() || !errors.As(p.Err, &pe) {
		t.Fatalf("panicking effect: %v, %v; want a failure carrying the PanicError", p.Status, p.Err)
	}
	if n := countCharges(t, s, p.Key); n != 0 {
		t.Fatalf("charges after the panic = %d; want 0 (rolled back)", n)
	}
	if rec, err := s.Get(ctx, p.Key); err != nil || rec.State == journal.StateSucceeded {
		t.Fatalf("record after the panic = %s, %v; want it not succeeded", rec.State, err)
	}
}

// A panic in an InTx effect rolls its writes back, so the harness knows
// nothing was done: the call fails with the PanicError, the record is
// settled failed (not left pending as an outcome it could not record), the
// effect event says not executed, and the tool is not retried.
func TestHarnessInTxPanicIsFailed(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "agent.journal"), nil)
	defer s.Close()
	var effects effectEvents
	h := harness.New(s, &harness.Options{Observer: &effects})
	defer h.Close()
	tries := 0
	boom := bolt.InTx(func(ctx context.Context, tx *bbolt.Tx, in json.RawMessage) (json.RawMessage, error) {
		tries++
		b, err := tx.CreateBucketIfNotExists(charges)
		if err != nil {
			return nil, err
		}
		if err := b.Put([]byte("boom/0"), in); err != nil {
			return nil, err
		}
		panic("a bug after the write")
	})
	if err := h.Register(harness.Tool{Name: "boom", Effect: journal.Keyed, InTx: boom}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "boom", Input: json.RawMessage(`{}`)})
	var pe *harness.PanicError
	if res.Status != harness.Failed || !errors.As(res.Err, &pe) || tries != 1 {
		t.Fatalf("Call = %v, %v after %d tries; want failed with the PanicError after 1 try", res.Status, res.Err, tries)
	}
	if rec, err := s.Get(ctx, res.Key); err != nil || rec.State != journal.StateFailed {
		t.Fatalf("record = %s, %v; want failed (the effect rolled back)", rec.State, err)
	}
	if len(effects) != 1 || effects[0].Class != retryclass.NotExecuted {
		t.Fatalf("after-effect events = %+v; want one, not executed", effects)
	}
}

// effectEvents keeps a harness's after-effect events (one call at a time).
type effectEvents []harness.Event

func (ev *effectEvents) Observe(_ context.Context, e harness.Event) {
	if e.Kind == harness.EventAfterEffect {
		*ev = append(*ev, e)
	}
}
