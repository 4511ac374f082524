package downstream

import (
	"context"
	"sync/atomic"

	"github.com/google/uuid"
)

// Attempt is what a tool's context tells the services the tool calls.
type Attempt struct {
	// Key is the intent's idempotency key: the same for every attempt.
	Key uuid.UUID
	// ID is the attempt's id: a new one for every try, for tracing.
	ID string
	// Unkeyed says the tool's downstream does not deduplicate by key.
	Unkeyed bool
	// Call is the call's place (CallFromContext).
	Call Call
}

// Call is the place of a tool call, without its input.
type Call struct {
	ID            string
	Tenant        string
	Session       string
	Turn          string
	Tool          string
	Discriminator string
}

type ctxKey struct{}

// attemptCtx is context.WithValue(ctx, ctxKey{}, &a) in one allocation.
type attemptCtx struct {
	context.Context
	a      Attempt
	resent atomic.Bool // set by Transport when net/http resent a request
}

func (c *attemptCtx) Value(key any) any {
	if key == (ctxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// NewContext returns a context carrying a, as a tool's attempt sees it:
// for testing a tool or a Transport on its own.
func NewContext(ctx context.Context, a Attempt) context.Context {
	return &attemptCtx{Context: ctx, a: a}
}

// noAttempt is what fromContext returns for a context without an attempt.
var noAttempt attemptCtx

func fromContext(ctx context.Context) (*attemptCtx, bool) {
	if c, ok := ctx.Value(ctxKey{}).(*attemptCtx); ok {
		return c, true
	}
	return &noAttempt, false
}

// KeyFromContext returns the idempotency key of the call running with ctx.
func KeyFromContext(ctx context.Context) (uuid.UUID, bool) {
	c, ok := fromContext(ctx)
	return c.a.Key, ok
}

// AttemptFromContext returns the id of the attempt running with ctx.
func AttemptFromContext(ctx context.Context) (string, bool) {
	c, ok := fromContext(ctx)
	return c.a.ID, ok
}

// CallFromContext returns the place of the call whose tool runs with ctx.
func CallFromContext(ctx context.Context) (Call, bool) {
	c, ok := fromContext(ctx)
	return c.a.Call, ok
}

// Resent reports whether Transport sent a request of ctx's attempt twice.
func Resent(ctx context.Context) bool {
	c, _ := fromContext(ctx)
	return c.resent.Load()
}
