package agentonce

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// InspectMode says whether Open serves agentctl over a unix socket beside
// a bbolt journal (OpenOptions.Inspect).
//
// The socket is "<journal>.sock", mode 0600, and serves only the agent's
// own user (on Linux the peer's uid is checked with SO_PEERCRED): agentctl
// reads the journal through it (ls, show, stats, replay, export), resolves
// unknown intents, and follows the events of every call (agentctl tail),
// exactly as it would read the file of a stopped agent. The socket is
// bounded (harness/inspect's defaults: 1 MiB a message, 32 connections,
// hello within 5 s, 2 min idle), so a stray client cannot take the agent's
// memory, descriptors or calls. A stale socket left by an agent that died
// is removed at Open; Close removes the socket before it releases the
// journal.
type InspectMode uint8

const (
	// InspectAuto serves the socket when the journal is a bbolt file opened
	// for writing and the socket can be made. When it cannot (a file that
	// is not a socket is in the way, another process serves there, the
	// file system takes no sockets), the Harness runs without it and says
	// why to Options.Logger: inspection is never a reason for an agent not
	// to start. The zero value and the default.
	InspectAuto InspectMode = iota
	// InspectOff never serves it: agentctl gets "journal in use" while the
	// agent runs.
	InspectOff
	// InspectRequire serves it or makes Open fail, with an error that
	// names the socket.
	InspectRequire
)

// filePath is a store kept in one file (the bbolt store): the only kind
// whose lock keeps agentctl out, and so the only kind served.
type filePath interface {
	Path() string
}

// served maps each Harness that serves agentctl to its server, for
// InspectSocket.
var served sync.Map // *harness.Harness → *inspect.Server

// serveInspect starts serving agentctl, as OpenOptions.Inspect says, when
// the journal is a bbolt file opened for writing (w.path is set). It runs
// in Open, before the Harness is shared.
func (w *wiring) serveInspect(h *harness.Harness, mode InspectMode, logger *slog.Logger) error {
	if w.path == "" {
		return nil
	}
	sock := inspect.SocketPath(w.path)
	srv, err := inspect.Listen(sock, w.store, &inspect.ServerOptions{Journal: w.path, Owner: h.Owner(),
		OnResolve: func(ctx context.Context, rec journal.Record) { w.events.resolved(ctx, &rec, logger) }})
	if err != nil {
		if mode == InspectRequire {
			return fmt.Errorf("agentonce: serve agentctl at %s: %w", sock, err)
		}
		if logger != nil {
			logger.Warn("agentonce: not serving agentctl; it gets \"journal in use\" while the agent runs",
				"socket", sock, "error", err.Error())
		}
		return nil
	}
	w.srv = srv
	w.events.srv.Store(srv)
	served.Store(h, srv)
	return nil
}

// InspectSocket returns the path of the socket h serves agentctl on, or ""
// when it serves none (see OpenOptions.Inspect): always "" for a Harness
// that Open did not open, or that is closed.
func InspectSocket(h *harness.Harness) string {
	if srv, ok := served.Load(h); ok {
		return srv.(*inspect.Server).Path()
	}
	return ""
}

// inspectObserver hands every event to the socket's followers, after the
// caller's own Observer. Building the event is skipped while nobody
// follows, so an agent nobody tails pays two atomic loads per event.
type inspectObserver struct {
	next harness.Observer
	srv  atomic.Pointer[inspect.Server] // nil until the server listens
}

func (o *inspectObserver) Observe(ctx context.Context, e harness.Event) {
	if o.next != nil {
		o.next.Observe(ctx, e)
	}
	srv := o.srv.Load()
	if srv == nil || !srv.Subscribed() {
		return
	}
	w := inspect.Event{Time: time.Now().UTC(), Kind: e.Kind.String(), Tool: e.Tool, Session: e.Session,
		Turn: e.Turn, Key: e.Key.String(), Attempt: e.Attempt, Attempts: e.Attempts, DelayMS: e.Delay.Milliseconds()}
	if e.Class != retryclass.Success {
		w.Class = e.Class.String()
	}
	if e.Kind == harness.EventResult {
		w.Status = e.Status.String()
		if e.Source != harness.NoSource {
			w.Source = e.Source.String()
		}
	}
	if e.Resolution != nil {
		w.Kind, w.Status = "resolved", e.Resolution.State.String()
	}
	if e.Err != nil {
		w.Error = e.Err.Error()
	}
	srv.Publish(w)
}

// resolved reports an operator's resolve served by the socket: the intent
// no longer needs a person (an EventNeedsPerson with its Resolution), to
// the Observers and, at Info, to the Logger or slog.Default().
func (o *inspectObserver) resolved(ctx context.Context, rec *journal.Record, logger *slog.Logger) {
	r := rec.Resolution
	if r == nil { // the store answered without one: nothing to report
		return
	}
	o.Observe(ctx, harness.Event{Kind: harness.EventNeedsPerson, Tool: rec.Intent.Tool, Session: rec.Intent.Session,
		Turn: rec.Intent.Turn, Key: rec.Key, Attempts: len(rec.Attempts), Resolution: r})
	cmp.Or(logger, slog.Default()).LogAttrs(ctx, slog.LevelInfo, "agentonce resolved by a person",
		slog.String("tool", rec.Intent.Tool), slog.String("key", rec.Key.String()), slog.String("state", r.State.String()),
		slog.String("by", r.By), slog.String("reason", r.Reason))
}
