package eino

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

// MaxStreamBytes bounds the output a streamable tool may send through the
// middleware: the whole stream is read before it is recorded. A longer
// stream ends the call as maybe executed (the tool may have acted).
const MaxStreamBytes = 4 << 20

// Options configures an Adapter. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant is the account the calls act for; it is part of every key.
	// Zero means the empty tenant (one account per journal).
	Tenant string
	// Tools gives, by tool name, the harness settings of the tool: Effect,
	// Timeout, Settle, Retry, Volatile, Schema, Reconcile, NoTurn. Name and
	// Func are the adapter's (Func runs the eino tool). A tool not named
	// here is journaled as journal.Unkeyed with the harness's defaults, the
	// safest kind: never re-run after an attempt that may have acted.
	// The first call of a tool not named here, when Tools names a tool no
	// call has used whose name is that one's give or take two letters (or
	// spelt in another case or with other separators), is logged as a
	// likely misspelling, naming the closest.
	Tools map[string]harness.Tool
	// Logger receives that warning; nil means slog.Default().
	Logger *slog.Logger
}

// Adapter routes every tool call of an eino ToolsNode through a Harness.
// It is safe for concurrent use.
type Adapter struct {
	h      *harness.Harness
	tenant string
	tools  map[string]harness.Tool
	logger *slog.Logger // nil: slog.Default(), when a line is written

	mu         sync.Mutex      // guards registered
	registered map[string]bool // tool names this Adapter registered in h
}

// New returns an Adapter on h.
func New(h *harness.Harness, opts *Options) *Adapter {
	a := &Adapter{h: h, registered: make(map[string]bool)}
	if opts != nil {
		a.tenant, a.tools, a.logger = opts.Tenant, opts.Tools, opts.Logger
	}
	return a
}

// Middleware returns the tool-call middleware to put in
// compose.ToolsNodeConfig.ToolCallMiddlewares (a react agent's
// ToolsConfig, an adk ChatModelAgent's ToolsConfig, or a graph's
// ToolsNode). Every call of an invokable, streamable or enhanced
// (multimodal) tool then becomes a harness.Harness.Call in the scope of
// the run's context (WithSession, harness.WithScope or the adk session values),
// with the model's tool call id as ToolCall.ID, and answers the model with
// the result: the tool's own output on success, else ForModel's text. A
// stream is read whole, recorded, and sent as one chunk.
//
// Middlewares listed before it run outside the harness: put one that
// interrupts the run (asks for approval) or rewrites arguments there, so
// that an interrupt is not recorded as the call's outcome.
func (a *Adapter) Middleware() compose.ToolMiddleware {
	return compose.ToolMiddleware{
		Invokable:          a.invokable,
		Streamable:         a.streamable,
		EnhancedInvokable:  a.enhancedInvokable,
		EnhancedStreamable: a.enhancedStreamable,
	}
}

func (a *Adapter) invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	run := func(ctx context.Context, in *compose.ToolInput) (json.RawMessage, error) {
		out, err := next(ctx, in)
		if err != nil {
			return nil, err
		}
		return encodeText(out.Result), nil
	}
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		r, err := a.call(ctx, in, run)
		if err != nil {
			return nil, err
		}
		return &compose.ToolOutput{Result: Text(r)}, nil
	}
}

func (a *Adapter) streamable(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
	run := func(ctx context.Context, in *compose.ToolInput) (json.RawMessage, error) {
		out, err := next(ctx, in)
		if err != nil {
			return nil, err
		}
		text, err := readStream(in.Name, out.Result, func(s string) int { return len(s) })
		if err != nil {
			return nil, err
		}
		return encodeText(strings.Join(text, "")), nil
	}
	return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		r, err := a.call(ctx, in, run)
		if err != nil {
			return nil, err
		}
		return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{Text(r)})}, nil
	}
}

func (a *Adapter) enhancedInvokable(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
	run := func(ctx context.Context, in *compose.ToolInput) (json.RawMessage, error) {
		out, err := next(ctx, in)
		if err != nil {
			return nil, err
		}
		return encodeResult(in.Name, out.Result)
	}
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		r, err := a.call(ctx, in, run)
		if err != nil {
			return nil, err
		}
		return &compose.EnhancedInvokableToolOutput{Result: toolResult(r)}, nil
	}
}

func (a *Adapter) enhancedStreamable(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
	run := func(ctx context.Context, in *compose.ToolInput) (json.RawMessage, error) {
		out, err := next(ctx, in)
		if err != nil {
			return nil, err
		}
		chunks, err := readStream(in.Name, out.Result, resultSize)
		if err != nil {
			return nil, err
		}
		whole, err := schema.ConcatToolResults(chunks)
		if err != nil {
			return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("eino: tool %q: its stream cannot be joined: %w", in.Name, err))
		}
		return encodeResult(in.Name, whole)
	}
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		r, err := a.call(ctx, in, run)
		if err != nil {
			return nil, err
		}
		return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{toolResult(r)})}, nil
	}
}

// readStream reads a tool's stream whole, up to MaxStreamBytes as size
// counts them.
func readStream[T any](tool string, sr *schema.StreamReader[T], size func(T) int) ([]T, error) {
	defer sr.Close()
	var chunks []T
	n := 0
	for {
		chunk, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return nil, err
		}
		if n += size(chunk); n > MaxStreamBytes {
			return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("eino: tool %q streamed more than %d bytes", tool, MaxStreamBytes))
		}
		chunks = append(chunks, chunk)
	}
}

// resultSize is a multimodal chunk's size as the journal would keep it.
func resultSize(r *schema.ToolResult) int {
	b, _ := json.Marshal(r)
	return len(b)
}

// runFunc runs the eino tool behind the middleware and returns its output
// as the journal keeps it.
type runFunc func(ctx context.Context, in *compose.ToolInput) (json.RawMessage, error)

// pending is what the harness's Func needs to run the eino tool: the call
// as eino made it and the rest of the endpoint chain. It travels in the
// call's context, which the harness hands to the Func.
type pending struct {
	in  *compose.ToolInput
	run runFunc
	// interrupt is the tool's own interrupt, when this call ran the tool
	// and it interrupted (written by the flight, read after it).
	interrupt error
}

type pendingKey struct{}

// call runs one tool call through the harness. Its error is only ever an
// interrupt of the run (the tool's, or a recorded one raised again).
func (a *Adapter) call(ctx context.Context, in *compose.ToolInput, run runFunc) (harness.Result, error) {
	if err := a.register(in.Name); err != nil {
		return harness.Result{CallID: in.CallID, Tool: in.Name, Status: harness.Rejected, Err: err}, nil
	}
	session, turn := scopeFrom(ctx)
	args := in.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}" // a tool without parameters
	}
	tc := harness.ToolCall{
		ID:      in.CallID,
		Tenant:  a.tenant,
		Session: session,
		Turn:    turn,
		Tool:    in.Name,
		Input:   json.RawMessage(args),
	}
	if d, ok := resumed(ctx); ok {
		tc.Discriminator = d
	}
	p := &pending{in: in, run: run}
	r := a.h.Call(context.WithValue(ctx, pendingKey{}, p), tc)
	if rec, ok := recordedInterrupt(r); ok {
		if p.interrupt != nil {
			return r, p.interrupt // this call's own, as the tool raised it
		}
		return r, tool.Interrupt(ctx, rec.Info)
	}
	return r, nil
}

// resumed tells a call that eino resumes as the target of a resume from
// the call that interrupted, and from other resumes: the resume data as
// JSON. A call eino only re-runs (a sibling of the resumed one) is not
// told apart: its recorded interrupt is raised again, as it would be.
func resumed(ctx context.Context) (string, bool) {
	wasInterrupted, _, _ := tool.GetInterruptState[any](ctx)
	if !wasInterrupted {
		return "", false
	}
	target, _, data := tool.GetResumeContext[any](ctx)
	if !target {
		return "", false
	}
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte(fmt.Sprintf("%T", data)) // data JSON cannot encode: one resume per type
	}
	return "resumed:" + string(b), true
}

// interruptField marks a recorded outcome that is an interrupt: the tool
// asked the run to stop instead of acting.
const interruptField = "agentonce.interrupt"

// interruptRecord is a tool's interrupt as the journal keeps it.
type interruptRecord struct {
	Info any `json:"info"`
}

// encodeInterrupt records err, a tool's interrupt, as the call's output:
// its info (eino does not expose an interrupt's state; info that JSON
// cannot encode is recorded as null).
func encodeInterrupt(err error) json.RawMessage {
	var rec interruptRecord
	rec.Info, _ = compose.IsInterruptRerunError(err)
	b, e := json.Marshal(map[string]interruptRecord{interruptField: rec})
	if e != nil {
		b, _ = json.Marshal(map[string]interruptRecord{interruptField: {}})
	}
	return b
}

// recordedInterrupt reports whether r is a recorded interrupt.
func recordedInterrupt(r harness.Result) (interruptRecord, bool) {
	if !r.OK() || len(r.Output) == 0 || r.Output[0] != '{' {
		return interruptRecord{}, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Output, &m) != nil || len(m) != 1 {
		return interruptRecord{}, false
	}
	raw, ok := m[interruptField]
	var rec interruptRecord
	if !ok || json.Unmarshal(raw, &rec) != nil {
		return interruptRecord{}, false
	}
	return rec, true
}

// register adds the tool named name to the Harness the first time it is
// called, with the settings of Options.Tools. A tool of that name already
// in the Harness (another Adapter's) is used as it is.
func (a *Adapter) register(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.registered[name] {
		return nil
	}
	t, listed := a.tools[name]
	t.Name, t.Func, t.InTx = name, runTool, nil
	if err := a.h.Register(t); err != nil && !errors.Is(err, harness.ErrDuplicateTool) {
		return err
	}
	a.registered[name] = true
	if !listed {
		if near := a.unusedNear(name); near != "" {
			cmp.Or(a.logger, slog.Default()).Warn("agentonce eino: a called tool is not in Options.Tools, so it is journaled as Unkeyed with the harness's defaults; Options.Tools names a tool no call has used: a misspelling?",
				"tool", name, "did you mean", near)
		}
	}
	return nil
}

// unusedNear returns the name in Options.Tools closest to name among those
// no call has used, if it is near enough to be a misspelling of it; else
// "". a.mu is held.
func (a *Adapter) unusedNear(name string) string {
	best, bestD := "", 0
	x := fold(name)
	for n := range a.tools {
		y := fold(n)
		d := distance(x, y)
		if a.registered[n] || d > 2 || d >= min(len(x), len(y)) {
			continue
		}
		if best == "" || d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	return best
}

// fold is a tool name as a misspelling would be judged: lower case,
// without separators, so that sendEmail and send_email are the same.
func fold(s string) []rune {
	var r []rune
	for _, c := range strings.ToLower(s) {
		if !strings.ContainsRune("_-. ", c) {
			r = append(r, c)
		}
	}
	return r
}

// distance is the Levenshtein distance of a and b.
func distance(a, b []rune) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := range a {
		prev := row[0]
		row[0] = i + 1
		for j := range b {
			cur := row[j+1]
			cost := 1
			if a[i] == b[j] {
				cost = 0
			}
			row[j+1] = min(row[j+1]+1, row[j]+1, prev+cost)
			prev = cur
		}
	}
	return row[len(b)]
}

// runTool is every tool's harness Func: it runs the eino tool the
// middleware is wrapping, with the context the harness gives (it carries
// the idempotency key for downstream.Transport).
func runTool(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	p, ok := ctx.Value(pendingKey{}).(*pending)
	if !ok {
		return nil, retryclass.Permanent(errors.New("eino: the tool was called outside the adapter's middleware, which holds the eino tool to run"))
	}
	out, err := p.run(ctx, p.in)
	if _, ok := compose.IsInterruptRerunError(err); ok {
		p.interrupt = err
		return encodeInterrupt(err), nil
	}
	return out, err
}

// encodeText is a tool's text as the journal keeps it: JSON as it is, any
// other text as a JSON string. Text reverses it.
func encodeText(text string) json.RawMessage {
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text) // a string always marshals
	return b
}

// Text returns the text the model reads for r: on success the tool's
// result as the tool returned it (a JSON string output is shown as the
// string itself), otherwise r.ForModel, the same on a replay.
func Text(r harness.Result) string {
	if r.OK() && len(r.Output) > 0 && r.Output[0] == '"' {
		var s string
		if json.Unmarshal(r.Output, &s) == nil {
			return s
		}
	}
	return r.ForModel()
}

// encodeResult is a multimodal result as the journal keeps it: its JSON.
func encodeResult(tool string, r *schema.ToolResult) (json.RawMessage, error) {
	b, err := json.Marshal(r)
	if err != nil {
		// The tool acted; only its answer cannot be kept.
		return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("eino: tool %q: the result cannot be recorded: %w", tool, err))
	}
	return b, nil
}

// toolResult is the multimodal result the model reads for r: the recorded
// result on success, else one text part, r.ForModel.
func toolResult(r harness.Result) *schema.ToolResult {
	if r.OK() {
		var out schema.ToolResult
		if json.Unmarshal(r.Output, &out) == nil {
			return &out
		}
	}
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: r.ForModel()}}}
}
