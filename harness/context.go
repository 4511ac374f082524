package harness

import (
	"context"
	"sync/atomic"

	"github.com/google/uuid"
)

type ctxKey int

const (
	keyCtxKey ctxKey = iota
)

// attemptInfo is what a tool's context carries.
type attemptInfo struct {
	key     uuid.UUID
	attempt string
	// unkeyed says the tool is Unkeyed: its downstream does not
	// deduplicate, so Transport must not mark its requests replayable.
	unkeyed bool
	// call is the call's place (CallFromContext).
	call ToolCall
	// resent is set by Transport when net/http wrote one of the attempt's
	// requests more than once (it resends a replayable request whose
	// reused connection died after sending): the answer it got may be the
	// resend's, and the first send may have acted.
	resent atomic.Bool
}

// attemptCtx is context.WithValue(ctx, keyCtxKey, &info) in one
// allocation instead of two: a tool's context is made for every attempt.
type attemptCtx struct {
	context.Context
	info attemptInfo
}

func (c *attemptCtx) Value(key any) any {
	if key == keyCtxKey {
		return &c.info
	}
	return c.Context.Value(key)
}

// CallFromContext returns the call whose tool runs with ctx: its ID,
// Tenant, Session, Turn, Tool and Discriminator (Input and StepKey are
// left out). A tool that calls another agentonce service passes them on,
// so that the service's records name the same conversation.
func CallFromContext(ctx context.Context) (ToolCall, bool) {
	ai, ok := ctx.Value(keyCtxKey).(*attemptInfo)
	if !ok {
		return ToolCall{}, false
	}
	return ai.call, true
}

// placeOf is c without its input and step key.
func placeOf(c ToolCall) ToolCall {
	return ToolCall{ID: c.ID, Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool, Discriminator: c.Discriminator}
}

// KeyFromContext returns the idempotency key of the call whose tool runs
// with ctx.
func KeyFromContext(ctx context.Context) (uuid.UUID, bool) {
	ai, ok := ctx.Value(keyCtxKey).(*attemptInfo)
	if !ok {
		return uuid.UUID{}, false
	}
	return ai.key, true
}

// AttemptFromContext returns the id of the attempt running with ctx: a new
// one for every try, distinct from the key, for tracing.
func AttemptFromContext(ctx context.Context) (string, bool) {
	ai, ok := ctx.Value(keyCtxKey).(*attemptInfo)
	if !ok {
		return "", false
	}
	return ai.attempt, true
}

// WithKey returns a context carrying key and attempt id as a tool sees
// them. Tools receive such a context from the harness; WithKey is for
// testing a tool or a Transport on its own.
func WithKey(ctx context.Context, key uuid.UUID, attemptID string) context.Context {
	return context.WithValue(ctx, keyCtxKey, &attemptInfo{key: key, attempt: attemptID})
}

// withValuesOf returns a context that ends when ctx ends and whose values
// are those of values, a context derived from ctx without its cancellation
// (the store's transaction context): an InTx effect keeps its caller's
// deadline and gains what the store put in.
func withValuesOf(ctx, values context.Context) context.Context {
	return valuesFrom{Context: ctx, values: values}
}

type valuesFrom struct {
	context.Context
	values context.Context
}

func (c valuesFrom) Value(key any) any { return c.values.Value(key) }
