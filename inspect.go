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

// InspectMode says whether Open or OpenJournal serves agentctl over a
// unix socket beside a bbolt journal, "<journal>.sock", for the process's
// own user (package harness/inspect).
type InspectMode uint8

const (
	// InspectAuto serves the socket when it can, else says why to
	// Options.Logger; the default.
	InspectAuto InspectMode = iota
	// InspectOff never serves it: agentctl gets "journal in use".
	InspectOff
	// InspectRequire serves it or fails to open, naming the socket.
	InspectRequire
)

// filePath is a store kept in one file (bbolt): the only kind served.
type filePath interface {
	Path() string
}

// served maps each Harness that serves agentctl to its server, for InspectSocket.
var served sync.Map // *harness.Harness → *inspect.Server

// serveInspect starts serving agentctl, as mode says, when w.path is set.
func (w *wiring) serveInspect(mode InspectMode, observer harness.Observer, logger *slog.Logger, owner string) error {
	if w.path == "" {
		return nil
	}
	sock := inspect.SocketPath(w.path)
	srv, err := inspect.Listen(sock, w.store, &inspect.ServerOptions{Journal: w.path, Owner: owner,
		OnResolve: func(ctx context.Context, rec journal.Record) { resolved(ctx, &rec, observer, logger) }})
	if err != nil {
		if mode == InspectRequire {
			return fmt.Errorf("agentonce: serve agentctl at %s: %w", sock, err)
		}
		if logger != nil {
			logger.Warn("agentonce: not serving agentctl; it gets \"journal in use\" while the journal is open",
				"socket", sock, "error", err.Error())
		}
		return nil
	}
	w.srv = srv
	if w.h != nil {
		w.events.srv.Store(srv)
		served.Store(w.h, srv)
	}
	return nil
}

// InspectSocket returns the socket h serves agentctl on, or "".
func InspectSocket(h *harness.Harness) string {
	if srv, ok := served.Load(h); ok {
		return srv.(*inspect.Server).Path()
	}
	return ""
}

// inspectObserver hands every event to the socket's followers, if any.
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

// resolved reports an operator's resolve served by the socket (an
// EventNeedsPerson with its Resolution) to observer and the log.
func resolved(ctx context.Context, rec *journal.Record, observer harness.Observer, logger *slog.Logger) {
	r := rec.Resolution
	if a := rec.Approval; r == nil && a != nil && rec.State == journal.StateAwaiting && len(a.Given) >= a.Need && a.Need > 0 {
		r = &a.Given[len(a.Given)-1] // the approval that completed it
	}
	if r == nil { // an approval short of enough, or no verdict: nothing ends
		return
	}
	if observer != nil {
		observer.Observe(ctx, harness.Event{Kind: harness.EventNeedsPerson, Tool: rec.Intent.Tool, Session: rec.Intent.Session,
			Turn: rec.Intent.Turn, Key: rec.Key, Attempts: len(rec.Attempts), Resolution: r})
	}
	cmp.Or(logger, slog.Default()).LogAttrs(ctx, slog.LevelInfo, "agentonce resolved by a person",
		slog.String("tool", rec.Intent.Tool), slog.String("key", rec.Key.String()), slog.String("state", r.State.String()),
		slog.String("by", r.By), slog.String("reason", r.Reason))
}
