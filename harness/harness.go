package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
	"github.com/agentonce/agentonce/singleflight"
)

// Options configures a Harness. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Owner names this process in leases; zero means host/pid/random.
	Owner string
	// LeaseTTL is how long an owner's lease lasts without renewal (every
	// LeaseTTL/3 while its flight runs). Zero means 1 minute.
	LeaseTTL time.Duration
	// RecordTTL is how long a record is kept; zero means journal.DefaultTTL.
	RecordTTL time.Duration
	// Retry is the default retry policy; nil means retryclass's defaults.
	Retry *retryclass.Policy
	// Guard is the suppression guard's scope; zero means journal.GuardTurn.
	Guard journal.GuardScope
	// FingerprintOnly keeps only each input's fingerprint in the journal.
	FingerprintOnly bool
	// Redact, when set, rewrites a tool's output before it is stored;
	// replays answer with what was stored.
	Redact func(tool string, output json.RawMessage) json.RawMessage
	// Limits bounds inputs; nil means keyderive's defaults (1 MiB, depth 64).
	Limits *keyderive.Options
	// Concurrency bounds the calls CallAll runs at once; zero means 8.
	Concurrency int
	// Logger receives the calls' steps worth a line. Nil means
	// slog.Default() for only what a person must see (EventNeedsPerson, a
	// call refused before its tool ran, a new random namespace).
	Logger *slog.Logger
	// Observer receives every event, for metrics and tests; nil means none.
	Observer Observer
	// CacheSize bounds the memo of input → key; zero means 4096, negative none.
	CacheSize int
	// CheckWait is how long a caller waits for the outcome of an Unkeyed
	// attempt being checked (settle window, then Reconcile) before it is
	// answered InProgress. Zero means 2 s; negative means no wait.
	CheckWait time.Duration
	// OnClose, when set, is called once by Close after every call, flight
	// and background check has ended; its error is Close's.
	OnClose func() error
}

// Harness wraps an agent's tools so that one intent produces at most one
// side effect. It is safe for concurrent use.
type Harness struct {
	store      journal.Store
	owner      string
	opts       Options
	namespace  [16]byte
	flights    singleflight.Group[flightKey, Result]
	memo       memo
	localReads bool // enables the replay fast path (see replay)
	attemptN   atomic.Uint64

	mu      sync.RWMutex // guards tools and closed
	tools   map[string]*tool
	closed  bool
	running sync.WaitGroup // calls in progress; Add only under mu with !closed
	checks  checks         // background checks of Unkeyed outcomes (settle.go)
}

// New returns a Harness on store; its Close does not close store.
func New(store journal.Store, opts *Options) *Harness {
	h := &Harness{store: store, tools: make(map[string]*tool)}
	h.checks.ctx, h.checks.stop = context.WithCancel(context.Background())
	h.checks.m = make(map[flightKey]*checkJob)
	if opts != nil {
		h.opts = *opts
	}
	h.opts.LeaseTTL = cmp.Or(max(h.opts.LeaseTTL, 0), time.Minute)
	h.opts.Concurrency = cmp.Or(max(h.opts.Concurrency, 0), 8)
	h.owner = cmp.Or(h.opts.Owner, defaultOwner())
	h.namespace = store.Namespace()
	if lr, ok := store.(localReader); ok {
		h.localReads = lr.LocalReads()
	}
	h.memo.max = cmp.Or(h.opts.CacheSize, 4096)
	return h
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Register adds tools. A name already registered, an empty name or a nil
// Func is an error, and then none of the tools is added.
func (h *Harness) Register(tools ...Tool) error {
	prepared := make(map[string]*tool, len(tools))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range tools {
		if t.Name == "" {
			return fmt.Errorf("harness: register: %w", ErrToolName)
		}
		if _, dup := h.tools[t.Name]; dup || prepared[t.Name] != nil {
			return fmt.Errorf("harness: register tool %q: %w", t.Name, ErrDuplicateTool)
		}
		pt, err := h.prepareTool(t)
		if err != nil {
			return err
		}
		prepared[t.Name] = pt
	}
	if h.closed {
		return ErrClosed
	}
	maps.Copy(h.tools, prepared)
	return nil
}

func (h *Harness) prepareTool(t Tool) (*tool, error) {
	if t.InTx != nil {
		if _, ok := h.store.(txCompleter); !ok {
			return nil, fmt.Errorf("harness: register tool %q: InTx needs a store that runs effects in its transactions (CompleteWith: PostgreSQL or bbolt), not %T", t.Name, h.store)
		}
	} else if t.Func == nil {
		return nil, fmt.Errorf("harness: register tool %q: Func is nil", t.Name)
	}
	if t.Effect > journal.Keyed {
		return nil, fmt.Errorf("harness: register tool %q: unknown effect kind %d", t.Name, t.Effect)
	}
	if t.Approvals < 0 || t.ApprovalTTL < 0 {
		return nil, fmt.Errorf("harness: register tool %q: Approvals %d and ApprovalTTL %v must not be negative", t.Name, t.Approvals, t.ApprovalTTL)
	}
	if t.Approvals > 0 && len(t.Volatile) > 0 {
		return nil, fmt.Errorf("harness: register tool %q: Approvals with Volatile: an approval names the input's fingerprint, which leaves %v out, so it would approve inputs it never showed", t.Name, t.Volatile)
	}
	pt := &tool{Tool: t}
	pt.deriver = keyderive.Deriver{Namespace: h.namespace, Options: h.opts.Limits}
	if len(t.Schema) > 0 || len(t.Volatile) > 0 {
		n, err := keyderive.NewNormalizer(t.Schema, t.Volatile)
		if err != nil {
			return nil, fmt.Errorf("harness: register tool %q: %w", t.Name, err)
		}
		pt.deriver.Normalizer = n
	}
	pt.policy = cmp.Or(t.Retry, h.opts.Retry)
	pt.journal = t.Effect != journal.ReadOnly || t.Journal || t.Approvals > 0
	pt.durable = t.Effect == journal.Unkeyed
	pt.leaseTTL = h.opts.LeaseTTL
	pt.timeout = t.Timeout
	if pt.timeout <= 0 && t.Effect == journal.Unkeyed {
		pt.timeout = DefaultUnkeyedTimeout
	}
	if t.Effect == journal.Unkeyed {
		pt.settle = max(cmp.Or(t.Settle, DefaultSettle), 0) // negative: none
		pt.quiet = pt.timeout + pt.settle
	}
	pt.retakeFn = func(r *journal.Record) bool { return pt.retake(r, h.now()) }
	return pt, nil
}

// Tools returns the registered tools, sorted by name.
func (h *Harness) Tools() []Tool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ts := make([]Tool, 0, len(h.tools))
	for _, t := range h.tools {
		ts = append(ts, t.Tool)
	}
	slices.SortFunc(ts, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return ts
}

// Store returns the journal the Harness records into.
func (h *Harness) Store() journal.Store { return h.store }

// Owner returns the lease owner name of this Harness.
func (h *Harness) Owner() string { return h.owner }

// Close refuses new calls, waits for those in progress, ends the
// background checks (their records left pending), then calls OnClose.
func (h *Harness) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.checks.stop()
	h.running.Wait()
	h.checks.wg.Wait()
	if h.opts.OnClose != nil {
		return h.opts.OnClose()
	}
	return nil
}

// enter counts a call in, or refuses it after Close; exit counts it out.
func (h *Harness) enter() error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return ErrClosed
	}
	h.running.Add(1)
	return nil
}

func (h *Harness) exit() { h.running.Done() }

// now is the store's clock when it shows one, else time.Now.
func (h *Harness) now() time.Time {
	if c, ok := h.store.(clock); ok {
		return c.Now()
	}
	return time.Now()
}
