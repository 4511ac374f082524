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
// and the attempt id (downstream.KeyFromContext, AttemptFromContext), and
// downstream.Transport sends them to the services the tool calls.
//
// Its error is classified by retryclass (Tool.Retry can override): a plain
// error, one the harness cannot place, is maybe-executed, which for an
// Unkeyed tool means unknown until Reconcile or an operator settles it.
// Say what you know: retryclass.Permanent(err) for a definite failure in
// which nothing happened (the model may correct its input),
// retryclass.MarkNotExecuted(err) for a failure that provably did not take
// effect and may be retried, and downstream.ReadJSON for an HTTP answer.
type Func func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// Tool is one tool the agent may call. Name and Func are required; every
// other field's zero value is a documented default.
type Tool struct {
	// Name is the tool's name as the model calls it.
	Name string
	// Description tells the model what the tool does; adapters put it in
	// the tool list they give the model. It plays no part in the key.
	Description string
	// Effect is the tool's effect kind: what the harness may do after an
	// attempt whose outcome is unknown (journal.Effect says what each
	// kind allows). Zero means journal.Unkeyed, the safest: never run
	// again silently.
	Effect journal.Effect
	// Func runs the tool.
	Func Func
	// Schema is the tool's input JSON Schema, the one the model sees. When
	// set, inputs are normalized before keying: declared defaults filled,
	// nulls of optional properties dropped.
	Schema json.RawMessage
	// InputType is the Go type a tool's input decodes into, set by Typed.
	// An adapter that offers the tool to a model derives the schema the
	// model sees from it when Schema is nil. Unlike Schema it plays no part
	// in the key: deriving a schema never changes an intent's key.
	InputType reflect.Type
	// Volatile names input properties left out of the key: free text such
	// as "reason" that the model rewrites on every retry.
	Volatile []string
	// Reconcile answers, for an Unkeyed tool whose attempt may have taken
	// effect (a timeout, a lost answer, a crash), "did the effect for this
	// key happen?": downstream.Happened with the effect's result,
	// DidNotHappen if it provably did not (the harness then runs the
	// tool), or CannotTell (the outcome stays unknown and a later
	// re-issue asks again). It may be asked as soon as an attempt ended
	// without an answer, and its "happened" is taken whenever it comes;
	// its "did not happen" counts only once the settle window has passed,
	// and the tool runs again only when a second one, a settle window
	// later, agrees. So a hook need only answer truthfully about the
	// moment it is asked. It runs in a background check
	// (Options.CheckWait), one call at a time per intent, under the tool's
	// Timeout; a panic in it is a "cannot tell". Nil means the outcome
	// stays unknown until resolved (agentctl resolve).
	Reconcile func(ctx context.Context, key uuid.UUID, input json.RawMessage) downstream.Reconciliation
	// Timeout bounds each attempt. Zero means no timeout of the harness's
	// own for Keyed, Idempotent and ReadOnly tools (the caller's context
	// still applies) and DefaultUnkeyedTimeout for Unkeyed ones, whose
	// settle window needs an end.
	Timeout time.Duration
	// Settle is how long after an attempt ended without an answer the
	// downstream may still be acting on it (a request it is still
	// processing after the client gave up). An Unkeyed tool's "did not
	// happen" is not believed, and an attempt that crashed is not taken
	// over, before its start + Timeout + Settle has passed; meanwhile
	// callers are answered InProgress (the outcome is being checked),
	// never with a re-run. Zero means DefaultSettle (2 minutes), whatever
	// the Timeout: a downstream's pace is not the client's patience. A
	// shorter window is a claim about the downstream that the tool makes
	// explicitly; negative means no wait at all. Only Unkeyed tools wait:
	// the other kinds absorb a repeat.
	Settle time.Duration
	// Retry is the retry policy; nil means the harness's Options.Retry.
	Retry *retryclass.Policy
	// Journal journals a ReadOnly tool too (it is not journaled by default).
	Journal bool
	// NoTurn says the tool's intent is the same in every turn (and, with no
	// session, in every session): a call of it may leave Session or Turn
	// empty. Without it such a call is rejected with ErrNoTurn.
	NoTurn bool
	// InTx is for a tool whose side effect lives in the journal's own
	// database: it runs the effect inside the transaction that records the
	// outcome, so both commit or neither does and no outcome is ever
	// unknown. It needs a store with CompleteWith (PostgreSQL: write it
	// with postgres.InTx; a bbolt file: bolt.InTx; each hands the effect
	// the transaction); Func is then not used and may be nil.
	InTx Func
	// Approvals, when positive, is how many distinct people must approve
	// each call, its exact input, before it runs: a call records the
	// intent awaiting approval, runs nothing, and is answered
	// AwaitingApproval with the command an approver runs (agentctl
	// approve KEY --fingerprint FP). A re-issue after the approvals runs
	// it once; a rejection or the deadline suppresses it. Zero means none.
	Approvals int
	// ApprovalTTL is how long a call awaits its approvals. Zero means the
	// record's TTL (Options.RecordTTL).
	ApprovalTTL time.Duration
}

// Typed adapts a function with typed input and output to a Tool. The input
// is decoded from the model's JSON (unknown fields are an error the model
// can correct) and the output encoded with encoding/json. The Tool's
// InputType is In, from which adapters derive the schema a model sees.
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

// next is reissue.Of for this tool at now: an Unkeyed intent to
// reconcile whose tool has no Reconcile hook has nobody to ask, and is
// answered as recorded (unknown) until an operator resolves it.
func (t *tool) next(r *journal.Record, now time.Time) reissue.Step {
	s := reissue.Of(r, t.Effect, now)
	if s == reissue.Reconcile && t.Reconcile == nil {
		return reissue.Answer
	}
	return s
}

// retake is the journal's Retake for this tool at now: a settled record is
// taken over when a re-issue would run or reconcile it.
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

// DefaultUnkeyedTimeout bounds each attempt of an Unkeyed tool whose Timeout
// is zero, so that its quiet time (start + Timeout + Settle), and with it
// reconciliation and takeover after a crash, has an end.
const DefaultUnkeyedTimeout = 30 * time.Second
