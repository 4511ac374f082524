package eino

import (
	"context"
	"strconv"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/harness"
)

// The adk session values the middleware reads the scope from when the
// context carries none (adk.WithSessionValues on Runner.Run, or
// adk.AddSessionValue inside the run). Both are strings.
const (
	SessionKey = "agentonce.session"
	TurnKey    = "agentonce.turn"
)

// WithSession returns a context whose tool calls run in session and in
// the turn that history ends in (UserTurn): the input messages of the run.
// Pass it to Generate, Stream, Invoke or Runner.Run. A run resumed from a
// checkpoint is given harness.WithScope with the session and turn of the
// run it resumes.
func WithSession(ctx context.Context, session string, history []*schema.Message) context.Context {
	return harness.WithScope(ctx, session, UserTurn(history))
}

// UserTurn returns the user turn that history ends in: the number, from 1,
// of its user messages. Tool results (schema.Tool messages), assistant and
// system messages do not count, nor does an empty user message. It
// returns "" for a history with no user message, which the Harness
// rejects (harness.ErrNoTurn).
func UserTurn(history []*schema.Message) string {
	n := 0
	for _, m := range history {
		if m != nil && m.Role == schema.User && (m.Content != "" || len(m.MultiContent) > 0 || len(m.UserInputMultiContent) > 0) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// scopeFrom returns the scope of ctx: harness.WithScope's (WithSession's),
// else the adk session values.
func scopeFrom(ctx context.Context) (session, turn string) {
	if session, turn, ok := harness.ScopeFromContext(ctx); ok {
		return session, turn
	}
	if v, ok := adk.GetSessionValue(ctx, SessionKey); ok {
		session, _ = v.(string)
	}
	if v, ok := adk.GetSessionValue(ctx, TurnKey); ok {
		turn, _ = v.(string)
	}
	return session, turn
}
