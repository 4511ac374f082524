package harness

import (
	"context"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// attemptContext is the context a tool's attempt runs with: the key, the
// attempt id, the call's place and whether the downstream may be asked to
// deduplicate by key (downstream.Transport reads it).
func (h *Harness) attemptContext(ctx context.Context, t *tool, p *prepared, attemptID string) context.Context {
	c := p.call
	return downstream.NewContext(ctx, downstream.Attempt{Key: p.d.Key, ID: attemptID, Unkeyed: t.Effect == journal.Unkeyed,
		Call: downstream.Call{ID: c.ID, Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool, Discriminator: c.Discriminator}})
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
