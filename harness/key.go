package harness

import (
	"fmt"
	"sync"

	"github.com/agentonce/agentonce/keyderive"
)

// prepared is a call whose tool is found and whose key is derived.
type prepared struct {
	call ToolCall
	tool *tool
	d    keyderive.Derived
	// unseen: the memo did not hold the call (see derive), so it is most
	// likely new and goes to Begin without the replay path's read.
	unseen bool
	err    error
}

// event is the start of every Event of p's call.
func (p *prepared) event() Event {
	return Event{Tool: p.tool.Name, Session: p.call.Session, Turn: p.call.Turn, Key: p.d.Key,
		CallID: p.call.ID, ToolDescription: p.tool.Description}
}

// prepare finds p's tool and derives its key; p.err says why it cannot.
func (h *Harness) prepare(p *prepared) {
	c := p.call
	p.tool, p.err = h.lookup(c.Tool)
	if p.err != nil {
		return
	}
	if c.StepKey == "" && !p.tool.NoTurn && (c.Session == "" || c.Turn == "") {
		p.err = fmt.Errorf("harness: tool %q: %w (session %q, turn %q)", c.Tool, ErrNoTurn, c.Session, c.Turn)
		return
	}
	p.d, p.unseen, p.err = h.derive(p.tool, c)
	if p.err != nil {
		p.err = fmt.Errorf("harness: tool %q: %w: %w", c.Tool, ErrInvalidInput, p.err)
	}
}

func (h *Harness) lookup(name string) (*tool, error) {
	h.mu.RLock()
	t, ok := h.tools[name]
	h.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("harness: %w %q (not registered)", ErrUnknownTool, name)
	}
	return t, nil
}

func intentOf(c ToolCall) keyderive.Intent {
	return keyderive.Intent{Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool, Discriminator: c.Discriminator}
}

// derive canonicalizes and keys a call's input, through the memo. unseen
// reports that the memo was asked and did not hold the call.
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

// memoMaxInput is the largest raw input whose derivation is memoized.
const memoMaxInput = 4 << 10

// memoEntry is one memoized derivation.
type memoEntry struct {
	tool   *tool
	intent keyderive.Intent
	step   string
	d      keyderive.Derived
}

// memo remembers raw input → derived key for recent calls, indexed by the
// raw input alone so that a lookup does not allocate.
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
	if m.m == nil || m.n >= m.max { // crude but bounded: it only saves work
		m.m, m.n = make(map[string][]memoEntry, min(m.max, 1024)), 0
	}
	m.m[string(input)] = append(m.m[string(input)], memoEntry{tool: t, intent: in, step: step, d: d})
	m.n++
}
