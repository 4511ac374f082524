package harness

import "context"

// scope is what WithScope puts on a context.
type scope struct{ session, turn string }

type scopeKey struct{}

// WithScope returns a context that carries a conversation's session and
// turn (the user message being answered) to an adapter whose framework
// runs the tools itself (eino, genkit), which reads them with
// ScopeFromContext into each ToolCall.
func WithScope(ctx context.Context, session, turn string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope{session, turn})
}

// ScopeFromContext returns the innermost session and turn WithScope put on
// ctx.
func ScopeFromContext(ctx context.Context) (session, turn string, ok bool) {
	s, ok := ctx.Value(scopeKey{}).(scope)
	return s.session, s.turn, ok
}
