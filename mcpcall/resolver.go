package mcpcall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// DefaultWindow is Options.Window's default: long enough for a host's
// retries and a model that asks again while answering one message, short
// enough that a user's request of the same thing later is a new intent.
const DefaultWindow = 10 * time.Minute

// maxSlots bounds the window's first calls kept in memory; past it the
// journal alone answers (one read more per call).
const maxSlots = 1 << 14

// Options configure a Resolver. A nil *Options means every default.
type Options struct {
	// Window is how long after a call without scope an identical call (same
	// tenant, principal, tool, canonical input and RepeatArgument) is the
	// same intent. Zero means DefaultWindow.
	Window time.Duration
}

// Placement says what placed a call.
type Placement uint8

const (
	// ByKey: the calling agent's intent key (MetaKey).
	ByKey Placement = iota + 1
	// ByScope: the session and turn in _meta.
	ByScope
	// ByTool: a harness.Tool.NoTurn tool called without session or turn.
	ByTool
	// ByWindow: no scope; the de-duplication window.
	ByWindow
)

// Call is a tools/call placed by Resolve.
type Call struct {
	harness.ToolCall
	Placement Placement
	// Window, for ByWindow, is the window's length and WindowLabel its
	// name ("<start, RFC 3339>/<length>"), the Turn the journal records.
	Window      time.Duration
	WindowLabel string
}

// Request is a tools/call as an adapter read it from its SDK.
type Request struct {
	// Tool is the called tool's name.
	Tool string
	// Meta is the request's _meta; nil when it has none.
	Meta map[string]any
	// Arguments is the tool's input as sent; empty means {}.
	Arguments json.RawMessage
	// Identity is the authenticated caller. Nil means a trusted client
	// whose _meta tenant is taken as it says, with no principal.
	Identity *Identity
}

// Resolver places tools/call requests for the tools of one Harness. It is
// safe for concurrent use.
type Resolver struct {
	h      *harness.Harness
	window time.Duration

	mu    sync.Mutex
	norms map[string]*keyderive.Normalizer // guarded by mu: by tool name; nil for a tool without schema
	slots map[string]*slot                 // guarded by mu: a window's first call, by window identity
}

// slot remembers the first call of a window identity in this process.
type slot struct {
	mu     sync.Mutex // held while a call of the identity is placed
	bucket int64      // guarded by mu
	at     time.Time  // guarded by mu: the first call's time; zero until placed
}

// NewResolver returns a Resolver for the tools of h.
func NewResolver(h *harness.Harness, opts *Options) *Resolver {
	w := DefaultWindow
	if opts != nil && opts.Window > 0 {
		w = opts.Window
	}
	return &Resolver{h: h, window: w, norms: map[string]*keyderive.Normalizer{}, slots: map[string]*slot{}}
}

// Window is the resolver's de-duplication window.
func (r *Resolver) Window() time.Duration { return r.window }

// Resolve places a call. In order:
//
//   - The tenant and principal are req.Identity's; without one, the tenant
//     is MetaTenant's and there is no principal. Session and, for a
//     window, the window's identity are scoped under the principal.
//   - MetaKey given: the call is keyed by it (harness.ToolCall.StepKey).
//   - MetaSession and MetaTurn given: they place it (both, or neither).
//   - Neither, for a NoTurn tool: the tool alone places it.
//   - Neither: the de-duplication window (see Options.Window).
//
// RepeatArgument is taken out of the arguments and, with
// MetaDiscriminator, becomes the Discriminator. An error is a *ScopeError,
// or a journal error met while looking for the window's first call; the
// tool must not run then.
func (r *Resolver) Resolve(ctx context.Context, req Request) (Call, error) {
	ms, serr := readMeta(req.Tool, req.Meta)
	if serr != nil {
		return Call{}, serr
	}
	input, repeat, serr := takeRepeat(req.Tool, req.Arguments)
	if serr != nil {
		return Call{}, serr
	}
	tenant, principal := ms.tenant, ""
	if req.Identity != nil {
		if req.Identity.Principal == "" {
			return Call{}, &ScopeError{Tool: req.Tool, Reason: "the authenticated identity names no principal"}
		}
		tenant, principal = req.Identity.Tenant, req.Identity.Principal
	}
	disc := ms.discriminator
	if repeat != "" {
		if disc != "" {
			disc += "/"
		}
		disc += RepeatArgument + "=" + repeat
	}
	c := Call{ToolCall: harness.ToolCall{Tenant: tenant, Tool: req.Tool, Input: input, Discriminator: disc}}
	switch {
	case ms.key != "":
		if _, err := uuid.Parse(ms.key); err != nil {
			return Call{}, &ScopeError{Tool: req.Tool, Invalid: []string{MetaKey + " (not a UUID)"}}
		}
		c.Placement = ByKey
		c.Session, c.Turn = bound(principal, ms.session), ms.turn
		c.StepKey = "mcp key " + bound(principal, ms.key)
		if disc != "" {
			c.StepKey += " " + strconv.Quote(disc)
		}
		return c, nil
	case ms.hasSession || ms.hasTurn:
		switch { // one of the two is given
		case !ms.hasSession:
			return Call{}, &ScopeError{Tool: req.Tool, Missing: []string{MetaSession}}
		case !ms.hasTurn:
			return Call{}, &ScopeError{Tool: req.Tool, Missing: []string{MetaTurn}}
		}
		c.Placement = ByScope
		c.Session, c.Turn = bound(principal, ms.session), ms.turn
		return c, nil
	}
	t, known := r.tool(req.Tool)
	if !known {
		// The harness answers an unknown tool (Rejected).
		c.Placement = ByScope
		return c, nil
	}
	if t.NoTurn {
		c.Placement = ByTool
		c.Session = bound(principal, "")
		return c, nil
	}
	return r.windowed(ctx, c, principal)
}

// takeRepeat removes RepeatArgument from an object input; its value.
func takeRepeat(tool string, args json.RawMessage) (json.RawMessage, string, *ScopeError) {
	b := bytes.TrimSpace(args)
	if len(b) == 0 {
		return json.RawMessage(`{}`), "", nil
	}
	if b[0] != '{' || !bytes.Contains(b, []byte(RepeatArgument)) {
		return args, "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return args, "", nil // the harness names the bad input
	}
	raw, ok := m[RepeatArgument]
	if !ok {
		return args, "", nil
	}
	delete(m, RepeatArgument)
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return args, "", &ScopeError{Tool: tool, Invalid: []string{RepeatArgument}}
	}
	s, ok := metaString(v)
	if !ok && v != nil {
		return args, "", &ScopeError{Tool: tool, Invalid: []string{RepeatArgument}}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args, "", &ScopeError{Tool: tool, Reason: err.Error()}
	}
	return out, s, nil
}

// tool returns the harness tool named name.
func (r *Resolver) tool(name string) (harness.Tool, bool) {
	for _, t := range r.h.Tools() {
		if t.Name == name {
			return t, true
		}
	}
	return harness.Tool{}, false
}

// windowed places a call without scope. The window's identity is the
// principal, tool, canonical input and discriminator; its first call
// within Window (in this process, or in the journal) names the window,
// else the current bucket of Window's length does.
func (r *Resolver) windowed(ctx context.Context, c Call, principal string) (Call, error) {
	canonical, err := r.canonical(c.Tool, c.Input)
	if err != nil {
		return Call{}, &ScopeError{Tool: c.Tool, Reason: "the input is not valid JSON: " + err.Error()}
	}
	sum := sha256.Sum256(canonical)
	id := strconv.Quote(principal) + " " + strconv.Quote(c.Tool) + " " + hex.EncodeToString(sum[:]) + " " + strconv.Quote(c.Discriminator)
	s := r.slot(id)
	s.mu.Lock()
	defer s.mu.Unlock()

	now := time.Now()
	w := int64(r.window)
	b := now.UnixNano() / w
	if s.at.IsZero() || now.Sub(s.at) >= r.window {
		prev, found, err := r.created(ctx, c, r.stepKey(b-1, id))
		if err != nil {
			return Call{}, err
		}
		if found && now.Sub(prev) < r.window {
			s.bucket, s.at = b-1, prev
		} else {
			at, found, err := r.created(ctx, c, r.stepKey(b, id))
			if err != nil {
				return Call{}, err
			}
			if !found {
				at = now
			}
			s.bucket, s.at = b, at
		}
	}
	c.Placement, c.Window = ByWindow, r.window
	c.WindowLabel = r.label(s.bucket)
	c.Session = bound(principal, "mcp-window")
	c.Turn = c.WindowLabel
	c.StepKey = r.stepKey(s.bucket, id)
	return c, nil
}

func (r *Resolver) label(bucket int64) string {
	return time.Unix(0, bucket*int64(r.window)).UTC().Format(time.RFC3339) + "/" + r.window.String()
}

func (r *Resolver) stepKey(bucket int64, id string) string {
	return "mcp window " + r.label(bucket) + " " + id
}

// created returns when the record of c's tenant and stepKey was created,
// if there is one.
func (r *Resolver) created(ctx context.Context, c Call, stepKey string) (time.Time, bool, error) {
	st := r.h.Store()
	rec, err := st.Get(ctx, keyderive.ExplicitKey(st.Namespace(), c.Tenant, stepKey))
	if errors.Is(err, journal.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("agentonce: tool %s: looking for an identical call in the journal: %w", c.Tool, err)
	}
	return rec.Created, true, nil
}

// canonical is the input as the harness keys it, normalized.
func (r *Resolver) canonical(tool string, input json.RawMessage) ([]byte, error) {
	r.mu.Lock()
	n, ok := r.norms[tool]
	r.mu.Unlock()
	if !ok {
		t, _ := r.tool(tool)
		if len(t.Schema) > 0 || len(t.Volatile) > 0 {
			var err error
			if n, err = keyderive.NewNormalizer(t.Schema, t.Volatile); err != nil {
				return nil, err
			}
		}
		r.mu.Lock()
		r.norms[tool] = n
		r.mu.Unlock()
	}
	c, err := keyderive.Canonicalize(input, nil)
	if err != nil || n == nil {
		return c, err
	}
	return n.Normalize(c)
}

// slot returns a window identity's slot; past maxSlots, passed ones go.
func (r *Resolver) slot(id string) *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.slots[id]; ok {
		return s
	}
	if len(r.slots) >= maxSlots {
		now := time.Now()
		for k, s := range r.slots {
			if s.mu.TryLock() {
				if now.Sub(s.at) >= r.window {
					delete(r.slots, k)
				}
				s.mu.Unlock()
			}
		}
	}
	s := &slot{}
	if len(r.slots) < maxSlots {
		r.slots[id] = s
	}
	return s
}
