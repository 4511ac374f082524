package eino

import (
	"context"
	"strconv"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/schema"
)

// The adk session values the middleware reads the scope from when the
// context carries none (adk.WithSessionValues on Runner.Run, or
// adk.AddSessionValue inside the run). Both are strings.
const (
	SessionKey = "agentonce.session"
	TurnKey    = "agentonce.turn"
)

type scope struct{ session, turn string }

type scopeKey struct{}

// WithScope returns a context whose tool calls run in session and turn:
// session is the application's conversation id, the same across restarts;
// turn names the user message being answered, the same for every model
// round trip until the next user message. Pass it to Generate, Stream,
// Invoke or Runner.Run, and the same scope again to a resume of the run.
func WithScope(ctx context.Context, session, turn string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope{session, turn})
}

// WithSession is WithScope with the turn that history ends in
// (UserTurn): the input messages of the run.
func WithSession(ctx context.Context, session string, history []*schema.Message) context.Context {
	return WithScope(ctx, session, UserTurn(history))
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

// scopeFrom returns the scope of ctx: WithScope's, else the adk session
// values.
func scopeFrom(ctx context.Context) (session, turn string) {
	if s, ok := ctx.Value(scopeKey{}).(scope); ok {
		return s.session, s.turn
	}
	if v, ok := adk.GetSessionValue(ctx, SessionKey); ok {
		session, _ = v.(string)
	}
	if v, ok := adk.GetSessionValue(ctx, TurnKey); ok {
		turn, _ = v.(string)
	}
	return session, turn
}
