package harness_test

import (
	"context"
	"testing"

	"github.com/agentonce/agentonce/harness"
)

func TestScopeFromContext(t *testing.T) {
	outer := harness.WithScope(context.Background(), "conv-1", "1")
	for _, c := range []struct {
		name          string
		ctx           context.Context
		session, turn string
		ok            bool
	}{
		{"none", context.Background(), "", "", false},
		{"set", outer, "conv-1", "1", true},
		{"innermost", harness.WithScope(outer, "conv-1", "2"), "conv-1", "2", true},
		{"empty", harness.WithScope(outer, "", ""), "", "", true},
	} {
		session, turn, ok := harness.ScopeFromContext(c.ctx)
		if session != c.session || turn != c.turn || ok != c.ok {
			t.Errorf("ScopeFromContext(%s) = %q, %q, %v; want %q, %q, %v", c.name, session, turn, ok, c.session, c.turn, c.ok)
		}
	}
}
