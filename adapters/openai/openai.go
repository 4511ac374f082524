package openai

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"

	"github.com/agentonce/agentonce/harness"
)

// Options configures an Adapter. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant is the account the calls act for; it is part of every key.
	// Zero means the empty tenant (one account per journal).
	Tenant string
	// Logger receives the warnings about the tools ChatTools and
	// ResponseTools offer: a tool the model is given no input schema or no
	// description for. Nil means slog.Default().
	Logger *slog.Logger
}

// Adapter runs the function calls of Chat Completions and Responses API
// answers through a Harness. It is safe for concurrent use.
type Adapter struct {
	h      *harness.Harness
	tenant string
	log    *slog.Logger

	mu      sync.Mutex                 // guards schemas
	schemas map[string]json.RawMessage // input schema offered, by tool name
}

// New returns an Adapter on h.
func New(h *harness.Harness, opts *Options) *Adapter {
	a := &Adapter{h: h}
	if opts != nil {
		a.tenant, a.log = opts.Tenant, opts.Logger
	}
	return a
}

// call is one function call of a model answer, whatever the API.
type call struct {
	id, name, arguments string
}

// run runs calls in session and turn, in one CallAll so that identical
// calls collapse.
func (a *Adapter) run(ctx context.Context, session, turn string, calls []call) []harness.Result {
	if len(calls) == 0 {
		return nil
	}
	tcs := make([]harness.ToolCall, len(calls))
	for i, c := range calls {
		args := c.arguments
		if args == "" {
			args = "{}" // a function without parameters may be called with none
		}
		tcs[i] = harness.ToolCall{
			ID:      c.id,
			Tenant:  a.tenant,
			Session: session,
			Turn:    turn,
			Tool:    c.name,
			Input:   json.RawMessage(args),
		}
	}
	return a.h.CallAll(ctx, tcs)
}

// turnOf is the turn of a history with n user messages: "" when there
// is none, which the Harness rejects (harness.ErrNoTurn).
func turnOf(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// peek returns the "type" and "role" of v as it would be sent.
func peek(v any) (typ, role string) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", ""
	}
	var m struct {
		Type string `json:"type"`
		Role string `json:"role"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Type, m.Role
}
