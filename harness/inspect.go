package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/agentonce/agentonce/harness/inspect"
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
	// agent runs, as before.
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

// inspectServer is the running agent's end of the protocol of
// harness/inspect. A nil *inspectServer serves nothing.
type inspectServer struct {
	srv *inspect.Server
}

// serveInspect starts serving agentctl, as OpenOpenOptions.Inspect says. It runs
// in Open, before the Harness is shared, so it may set h.opts.Observer.
func (h *Harness) serveInspect() error {
	fp, ok := h.store.(filePath)
	if !ok || h.inspectMode == InspectOff || h.readOnly {
		return nil
	}
	sock := inspect.SocketPath(fp.Path())
	srv, err := inspect.Listen(sock, h.store, &inspect.ServerOptions{Journal: fp.Path(), Owner: h.owner})
	if err != nil {
		if h.inspectMode == InspectRequire {
			return fmt.Errorf("harness: serve agentctl at %s: %w", sock, err)
		}
		if h.opts.Logger != nil {
			h.opts.Logger.Warn("agentonce: not serving agentctl; it gets \"journal in use\" while the agent runs",
				"socket", sock, "error", err.Error())
		}
		return nil
	}
	h.inspect = &inspectServer{srv: srv}
	h.opts.Observer = &inspectObserver{next: h.opts.Observer, srv: srv}
	return nil
}

// InspectSocket returns the path of the socket the Harness serves agentctl
// on, or "" when it serves none (see OpenOptions.Inspect).
func (h *Harness) InspectSocket() string {
	if h.inspect == nil {
		return ""
	}
	return h.inspect.srv.Path()
}

func (s *inspectServer) close() error {
	if s == nil {
		return nil
	}
	return s.srv.Close()
}

// inspectObserver hands every event to the socket's followers, after the
// caller's own Observer. Building the event is skipped while nobody
// follows, so an agent nobody tails pays one atomic load per event.
type inspectObserver struct {
	next Observer
	srv  *inspect.Server
}

func (o *inspectObserver) Observe(ctx context.Context, e Event) {
	if o.next != nil {
		o.next.Observe(ctx, e)
	}
	if !o.srv.Subscribed() {
		return
	}
	w := inspect.Event{Time: time.Now().UTC(), Kind: e.Kind.String(), Tool: e.Tool, Session: e.Session,
		Turn: e.Turn, Key: e.Key.String(), Attempt: e.Attempt, Attempts: e.Attempts, DelayMS: e.Delay.Milliseconds()}
	if e.Class != retryclass.Success {
		w.Class = e.Class.String()
	}
	if e.Kind == EventResult {
		w.Status = e.Status.String()
		if e.Source != NoSource {
			w.Source = e.Source.String()
		}
	}
	if e.Err != nil {
		w.Error = e.Err.Error()
	}
	o.srv.Publish(w)
}
