package harness

import (
	"sync"

	"github.com/agentonce/agentonce/keyderive"
)

// memoMaxInput is the largest raw input whose derivation is memoized; the
// memo holds canonical inputs, so it stays small.
const memoMaxInput = 4 << 10

type memoKey struct {
	tool   *tool
	intent keyderive.Intent
	step   string
	input  string
}

// memo remembers raw input → derived key for recent calls: the replay path
// (a model re-issuing a call) then skips canonicalization and hashing.
// Deriving is a pure function of the key's fields, so a hit is exact.
type memo struct {
	max int // entries; negative disables

	mu sync.RWMutex // guards m
	m  map[memoKey]keyderive.Derived
}

func (m *memo) get(k *memoKey) (keyderive.Derived, bool) {
	m.mu.RLock()
	d, ok := m.m[*k]
	m.mu.RUnlock()
	return d, ok
}

func (m *memo) put(k *memoKey, d keyderive.Derived) {
	m.mu.Lock()
	if m.m == nil || len(m.m) >= m.max {
		// Dropping everything at once is crude but O(1) and bounded; the
		// memo only saves work, it never decides anything.
		m.m = make(map[memoKey]keyderive.Derived, min(m.max, 1024))
	}
	m.m[*k] = d
	m.mu.Unlock()
}

// derive canonicalizes and keys a call's input, through the memo.
func (h *Harness) derive(t *tool, c Call) (keyderive.Derived, error) {
	useMemo := h.memo.max > 0 && len(c.Input) <= memoMaxInput
	var k memoKey
	if useMemo {
		k = memoKey{tool: t, intent: intentOf(c), step: c.StepKey, input: string(c.Input)}
		if d, ok := h.memo.get(&k); ok {
			return d, nil
		}
	}
	var d keyderive.Derived
	var err error
	if c.StepKey != "" {
		d, err = t.deriver.DeriveExplicit(intentOf(c), c.StepKey, c.Input)
	} else {
		d, err = t.deriver.Derive(intentOf(c), c.Input)
	}
	if err != nil {
		return d, err
	}
	if useMemo {
		h.memo.put(&k, d)
	}
	return d, nil
}
