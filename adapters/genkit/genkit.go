package genkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

// Options configures an Adapter. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant is the account the calls act for; it is part of every key.
	// Zero means the empty tenant, unless the flow's action context has
	// TenantKey.
	Tenant string
}

// Adapter runs genkit tools defined with DefineTool through a Harness. It
// is safe for concurrent use.
type Adapter struct {
	h      *harness.Harness
	tenant string
}

// New returns an Adapter on h.
func New(h *harness.Harness, opts *Options) *Adapter {
	a := &Adapter{h: h}
	if opts != nil {
		a.tenant = opts.Tenant
	}
	return a
}

// interruptField marks a recorded outcome that is an interrupt: the
// tool asked the run to stop (ToolContext.Interrupt) instead of acting.
const interruptField = "agentonce.interrupt"

// DefineTool is genkit.DefineTool for a tool whose calls go through the
// harness: spec gives the name, the description and the harness settings
// (Effect above all; its Func is ignored), fn is the tool as genkit would
// run it. Each call of the tool by the model becomes a
// harness.Harness.Call in the scope of the call's context (WithSession,
// harness.WithScope, or the flow's action context), and the model reads the
// recorded output on success or harness.Result.ForModel otherwise, never
// an error: so the tool's output type is any.
//
// An interrupt (ToolContext.Interrupt) is recorded as the outcome of the
// call it interrupted, and raised again when that call is repeated. A
// restart of the tool request (ToolDef.RestartWith) is a new intent,
// keyed by its resumed metadata: run once, and answered from the journal
// when the same restart is run again (a crash, a retried resume).
//
// It panics, as genkit.DefineTool does, if the tool cannot be registered.
func DefineTool[In, Out any](g *genkit.Genkit, a *Adapter, spec harness.Tool, fn ai.ToolFunc[In, Out], opts ...ai.ToolOption) *ai.ToolDef[In, any] {
	t := newTool(a, spec, fn)
	return genkit.DefineTool(g, spec.Name, spec.Description, t.call, opts...)
}

// tool is one protected genkit tool.
type tool[In, Out any] struct {
	a    *Adapter
	name string
	fn   ai.ToolFunc[In, Out]
}

func newTool[In, Out any](a *Adapter, spec harness.Tool, fn ai.ToolFunc[In, Out]) *tool[In, Out] {
	t := &tool[In, Out]{a: a, name: spec.Name, fn: fn}
	spec.Func, spec.InTx = t.run, nil
	if err := a.h.Register(spec); err != nil {
		panic(fmt.Errorf("agentonce genkit.DefineTool %q: %w", spec.Name, err))
	}
	return t
}

// pending is the genkit call the harness's Func runs: its ToolContext and
// input, which travel in the call's context.
type pending[In any] struct {
	tc *ai.ToolContext
	in In
}

type pendingKey struct{ tool string }

// call is the genkit tool function: one harness call per tool request.
// Its error is only ever an interrupt.
func (t *tool[In, Out]) call(tc *ai.ToolContext, in In) (any, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return harness.Result{Tool: t.name, Status: harness.Rejected,
			Err: fmt.Errorf("genkit: tool %q: %w: %w", t.name, harness.ErrInvalidInput, err)}.ForModel(), nil
	}
	tenant, session, turn := t.a.scopeFrom(tc)
	call := harness.ToolCall{Tenant: tenant, Session: session, Turn: turn, Tool: t.name, Input: input}
	if tc.Resumed != nil {
		call.Discriminator, err = resumedDiscriminator(tc)
		if err != nil {
			return harness.Result{Tool: t.name, Status: harness.Rejected, Err: err}.ForModel(), nil
		}
	}
	ctx := context.WithValue(tc.Context, pendingKey{t.name}, &pending[In]{tc: tc, in: in})
	r := t.a.h.Call(ctx, call)
	if meta, ok := interrupted(r); ok {
		return nil, tc.Interrupt(&ai.InterruptOptions{Metadata: meta})
	}
	return Output(r), nil
}

// resumedDiscriminator tells a restarted call from the call it restarts
// and from other restarts: its resumed metadata as JSON (encoding/json
// sorts map keys, so the same metadata gives the same text).
func resumedDiscriminator(tc *ai.ToolContext) (string, error) {
	b, err := json.Marshal(tc.Resumed)
	if err != nil {
		return "", fmt.Errorf("genkit: the resumed metadata cannot be keyed: %w", err)
	}
	return "resumed:" + string(b), nil
}

// run is the tool's harness Func: it runs fn with the ToolContext of the
// genkit call, on the harness's context (it carries the idempotency key
// for downstream.Transport).
func (t *tool[In, Out]) run(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	p, ok := ctx.Value(pendingKey{t.name}).(*pending[In])
	if !ok {
		return nil, retryclass.Permanent(fmt.Errorf("genkit: tool %q was called outside genkit", t.name))
	}
	tc := *p.tc
	tc.Context = ctx
	out, err := t.fn(&tc, p.in)
	if isInterrupt, meta := ai.IsToolInterruptError(err); isInterrupt {
		return json.Marshal(map[string]any{interruptField: meta})
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		// The tool acted; only its answer cannot be kept.
		return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("genkit: tool %q: the output cannot be recorded: %w", t.name, err))
	}
	return b, nil
}

// interrupted reports whether r is a recorded interrupt, and its metadata.
func interrupted(r harness.Result) (map[string]any, bool) {
	if !r.OK() || len(r.Output) == 0 || r.Output[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Output, &m) != nil || len(m) != 1 {
		return nil, false
	}
	raw, ok := m[interruptField]
	if !ok {
		return nil, false
	}
	var meta map[string]any
	_ = json.Unmarshal(raw, &meta) // null: an interrupt without metadata
	return meta, true
}

// Output returns what the model reads for r: on success the tool's
// recorded output (JSON), otherwise the text r.ForModel, the same on a
// replay.
func Output(r harness.Result) any {
	if r.OK() {
		return json.RawMessage(r.ForModel())
	}
	return r.ForModel()
}
