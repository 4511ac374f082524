package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// Func is a tool's implementation. Its context carries the idempotency key
// and the attempt id (package downstream). Its error is classified by
// retryclass: a plain error is maybe-executed; say what you know with
// retryclass.Permanent (nothing happened), retryclass.MarkNotExecuted
// (provably not executed, retried), or downstream.ReadJSON for HTTP.
type Func func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// Tool is one tool the agent may call; Name and Func are required.
type Tool struct {
	// Name is the tool's name as the model calls it.
	Name string
	// Description tells the model what the tool does; adapters put it in
	// the tool list they give the model. It plays no part in the key.
	Description string
	// Effect is the tool's effect kind; zero means journal.Unkeyed, the
	// safest.
	Effect journal.Effect
	// Func runs the tool.
	Func Func
	// Schema is the tool's input JSON Schema, the one the model sees. When
	// set, inputs are normalized before keying: declared defaults filled,
	// nulls of optional properties dropped.
	Schema json.RawMessage
	// InputType is the Go type the input decodes into, set by Typed, from
	// which an adapter derives the model's schema when Schema is nil. It
	// plays no part in the key.
	InputType reflect.Type
	// Volatile names input properties left out of the key: free text such
	// as "reason" that the model rewrites on every retry.
	Volatile []string
	// Reconcile answers, for an Unkeyed tool whose attempt may have taken
	// effect, "did the effect for this key happen?": downstream.Happened
	// with its result, DidNotHappen (the tool runs again once a second one,
	// a settle window later, agrees), or CannotTell. A panic in it is a
	// "cannot tell". Nil means the outcome stays unknown until resolved.
	// docs/harness.md says when it is asked.
	Reconcile func(ctx context.Context, key uuid.UUID, input json.RawMessage) downstream.Reconciliation
	// Timeout bounds each attempt. Zero means none of the harness's own,
	// but DefaultUnkeyedTimeout for an Unkeyed tool.
	Timeout time.Duration
	// Settle is how long after an Unkeyed attempt's start + Timeout the
	// downstream may still be acting on it: until then its "did not
	// happen" is not believed and it is not taken over. Zero means
	// DefaultSettle; negative means no wait.
	Settle time.Duration
	// Retry is the retry policy; nil means the harness's Options.Retry.
	Retry *retryclass.Policy
	// Journal journals a ReadOnly tool too (it is not journaled by default).
	Journal bool
	// NoTurn lets a call leave Session or Turn empty (the intent is the
	// same in every turn); without it such a call gets ErrNoTurn.
	NoTurn bool
	// InTx runs an effect that lives in the journal's own database inside
	// the transaction that records the outcome (postgres.InTx, bolt.InTx),
	// so no outcome is ever unknown; Func may then be nil.
	InTx Func
	// Approvals, when positive, is how many distinct people must approve
	// each call's exact input before it runs; until then it is answered
	// AwaitingApproval. Zero means none.
	Approvals int
	// ApprovalTTL is how long a call awaits its approvals; zero means
	// Options.RecordTTL.
	ApprovalTTL time.Duration
}

// Typed adapts a function with typed input and output to a Tool: the
// input is decoded strictly from the model's JSON, the output encoded
// with encoding/json, and InputType is In.
func Typed[In, Out any](name string, effect journal.Effect, fn func(ctx context.Context, in In) (Out, error)) Tool {
	return Tool{
		Name:      name,
		Effect:    effect,
		InputType: reflect.TypeFor[In](),
		Func: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var in In
			if err := decodeStrict(raw, &in); err != nil {
				return nil, retryclass.Permanent(fmt.Errorf("tool %s: decode input: %w", name, err))
			}
			out, err := fn(ctx, in)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(out)
			if err != nil {
				// The effect happened; only its answer could not be encoded.
				return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("tool %s: encode output: %w", name, err))
			}
			return b, nil
		},
	}
}

// tool is a registered Tool with what the harness derives from it once.
type tool struct {
	Tool
	deriver  keyderive.Deriver
	policy   *retryclass.Policy
	journal  bool // false only for unjournaled journal.ReadOnly tools
	durable  bool // the write-ahead must be on disk before the tool runs
	leaseTTL time.Duration
	timeout  time.Duration              // each attempt's bound (Timeout or its default)
	settle   time.Duration              // the wait before reconciling (Settle or its default)
	quiet    time.Duration              // from an attempt's start until its downstream is quiet (Unkeyed: timeout + settle)
	retakeFn func(*journal.Record) bool // the journal's Retake, bound once
}

// next is reissue.Of for this tool; without a hook, Reconcile is Answer.
func (t *tool) next(r *journal.Record, now time.Time) reissue.Step {
	s := reissue.Of(r, t.Effect, now)
	if s == reissue.Reconcile && t.Reconcile == nil {
		return reissue.Answer
	}
	return s
}

// retake is the journal's Retake for this tool at now.
func (t *tool) retake(r *journal.Record, now time.Time) bool {
	s := t.next(r, now)
	return s == reissue.Retry || s == reissue.Reconcile
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// DefaultUnkeyedTimeout bounds each attempt of an Unkeyed tool whose
// Timeout is zero, so that its settle window has an end.
const DefaultUnkeyedTimeout = 30 * time.Second
