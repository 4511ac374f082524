package genkit

import (
	"context"
	"strconv"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"

	"github.com/agentonce/agentonce/harness"
)

// The keys of a flow's action context (core.ActionContext, set by a
// context provider of a flow served over HTTP, or core.WithActionContext)
// that the tools read their scope from when the context has no
// harness.WithScope. Their values are strings.
const (
	TenantKey  = "agentonce.tenant"
	SessionKey = "agentonce.session"
	TurnKey    = "agentonce.turn"
)

// WithSession returns a context whose tool calls run in session and in
// the turn that history ends in (UserTurn): the messages the generation
// is given. Pass it to genkit.Generate (or run the flow with it). A
// resumed generation (ai.WithToolRestarts) is given harness.WithScope with
// the session and turn of the generation it resumes.
func WithSession(ctx context.Context, session string, history []*ai.Message) context.Context {
	return harness.WithScope(ctx, session, UserTurn(history))
}

// UserTurn returns the user turn that history ends in: the number, from 1,
// of its user messages that are not empty. Tool responses (ai.RoleTool),
// model and system messages do not count. It returns "" for a history with
// no user message, which the Harness rejects (harness.ErrNoTurn).
func UserTurn(history []*ai.Message) string {
	n := 0
	for _, m := range history {
		if m != nil && m.Role == ai.RoleUser && len(m.Content) > 0 {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// scopeFrom returns a call's tenant, session and turn:
// harness.WithScope's (WithSession's) session and turn, else the action
// context's; the action context's tenant, else Options.Tenant.
func (a *Adapter) scopeFrom(ctx context.Context) (tenant, session, turn string) {
	tenant = a.tenant
	ac := core.FromContext(ctx)
	if v, ok := ac[TenantKey].(string); ok && v != "" {
		tenant = v
	}
	if session, turn, ok := harness.ScopeFromContext(ctx); ok {
		return tenant, session, turn
	}
	session, _ = ac[SessionKey].(string)
	turn, _ = ac[TurnKey].(string)
	return tenant, session, turn
}
