package harness

import (
	"sync"

	"github.com/agentonce/agentonce/keyderive"
)

// memoMaxInput is the largest raw input whose derivation is memoized; the
// memo holds canonical inputs, so it stays small.
const memoMaxInput = 4 << 10

// memoEntry is one memoized derivation; entries with the same raw input
// (for other tools or intents) share a slot.
type memoEntry struct {
	tool   *tool
	intent keyderive.Intent
	step   string
	d      keyderive.Derived
}

// memo remembers raw input → derived key for recent calls: the replay path
// (a model re-issuing a call) then skips canonicalization and hashing.
// Deriving is a pure function of the key's fields, so a hit is exact. It is
// indexed by the raw input alone so that a lookup converts the input's
// bytes to a map key without allocating.
type memo struct {
	max int // entries; zero or negative disables

	mu sync.RWMutex // guards m and n
	m  map[string][]memoEntry
	n  int
}

func (m *memo) get(t *tool, in keyderive.Intent, step string, input []byte) (keyderive.Derived, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.m[string(input)] {
		if e.tool == t && e.intent == in && e.step == step {
			return e.d, true
		}
	}
	return keyderive.Derived{}, false
}

func (m *memo) put(t *tool, in keyderive.Intent, step string, input []byte, d keyderive.Derived) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || m.n >= m.max {
		// Dropping everything at once is crude but O(1) and bounded; the
		// memo only saves work, it never decides anything.
		m.m, m.n = make(map[string][]memoEntry, min(m.max, 1024)), 0
	}
	m.m[string(input)] = append(m.m[string(input)], memoEntry{tool: t, intent: in, step: step, d: d})
	m.n++
}

// derive canonicalizes and keys a call's input, through the memo. unseen
// reports that the memo was asked and did not hold the call: a call not
// made recently in this process, most likely a new intent.
func (h *Harness) derive(t *tool, c ToolCall) (d keyderive.Derived, unseen bool, err error) {
	in := intentOf(c)
	useMemo := h.memo.max > 0 && len(c.Input) <= memoMaxInput
	if useMemo {
		if d, ok := h.memo.get(t, in, c.StepKey, c.Input); ok {
			return d, false, nil
		}
	}
	if c.StepKey != "" {
		d, err = t.deriver.DeriveExplicit(in, c.StepKey, c.Input)
	} else {
		d, err = t.deriver.Derive(in, c.Input)
	}
	if err != nil {
		return d, false, err
	}
	if useMemo {
		h.memo.put(t, in, c.StepKey, c.Input, d)
	}
	return d, useMemo, nil
}
