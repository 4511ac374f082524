package openai

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/agentonce/agentonce/harness"
)

// Options configures an Adapter. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant is the account the calls act for; it is part of every key.
	// Zero means the empty tenant (one account per journal).
	Tenant string
}

// Adapter runs the function calls of Chat Completions and Responses API
// answers through a Harness. It is safe for concurrent use.
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

// emptySchema is the parameters of a tool registered without a schema: a
// function that takes an object with any properties.
const emptySchema = `{"type":"object"}`

// parameters returns t's input schema as the SDKs take it.
func parameters(t harness.Tool) map[string]any {
	schema := t.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(emptySchema)
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		// Register accepted the schema, so it is valid JSON; an array or a
		// scalar is no object schema, and the API would refuse it anyway.
		return map[string]any{"type": "object"}
	}
	return m
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
