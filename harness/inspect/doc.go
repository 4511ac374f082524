// Package inspect is the local protocol by which a running agent answers
// agentctl: read-only inspection of its journal, operator resolution, and a
// stream of the harness's events, over a unix socket beside the journal.
//
// A bbolt journal is locked while its agent runs, so no other process can
// read it. The agent (harness.Open on a bbolt file) serves this protocol at
// SocketPath(journal), "<journal>.sock", and agentctl talks to it when the
// file is locked. The Server answers from the agent's own journal.Store; the
// Client is a journal.Store whose reads and Resolve travel over the socket,
// so agentctl's commands run unchanged against it.
//
// The package sits under harness because the agent that serves it is a
// Harness: harness.Open starts the Server, and agentctl (cmd/agentctl) dials
// the Client. It imports only journal and keyderive, never harness, so the
// import arrows run one way (harness → inspect → journal). It is public
// because agentctl lives outside harness's tree; its version-1 wire form is
// the promise, and a tool of one's own may speak it through the Client.
//
// # Protocol, version 1
//
// Each message is one JSON object on one line. The client opens with a
// hello, {"protocol":"agentonce-inspect","version":1}; the server answers
// with its own hello (version, namespace, journal path, pid, lease owner),
// or with an error whose code is "version" when the versions differ, and
// closes. Versions must be equal: both ends ship in one module. Then the
// client sends requests one at a time, each answered before the next:
//
//	{"op":"get","key":K}              → {"record":R}
//	{"op":"list","filter":F}          → {"record":R} … {"end":true}
//	{"op":"stats"}                    → {"stats":S}
//	{"op":"gc_dry_run"}               → {"gc":G}
//	{"op":"resolve","key":K,"resolution":X} → {"record":R}
//	{"op":"events"}                   → {"subscribed":true} {"event":E} … {"bye":TEXT}
//
// Any request may be answered {"error":{"code":C,"message":M}}; C names a
// journal sentinel (not_found, not_resolvable, fenced, invalid, corrupt,
// newer_version, read_only, closed) or refused, version, busy, internal.
// After "events" the connection only carries events: {"dropped":N} says N events
// were lost because the client read too slowly, and {"bye":…} that the
// agent is closing its journal. The record, stats and event forms are the
// wire types of this package (Record, Stats, Event).
//
// # Bounds
//
// A client of the agent's own user may be a stray script, and must not be
// able to take the agent down. The Server bounds what clients make it hold
// (ServerOptions; the harness serves with the defaults):
//
//   - a message of at most 1 MiB (MaxFrame; the hello at most 4 KiB): a
//     longer line is answered with an "invalid" error and the connection
//     closed, after at most that many bytes were read;
//   - the hello within 5 s of connecting (HandshakeTimeout);
//   - the next request within 2 min (IdleTimeout), and each write the agent
//     makes taken by the client within as long: a client that stops
//     reading mid-list or mid-stream is cut. An event stream may be quiet
//     for any time;
//   - at most 32 connections at once (MaxConns); one more is answered with
//     a hello whose error code is "busy" (ErrBusy) and closed, and the
//     agent refuses at most 100 a second (the rest wait in the backlog).
//
// A connection that broke a bound keeps its slot, unread, for 100 ms
// before it is closed, so that flooding in a loop makes the agent read
// little. Clients can thus hold at most MaxConns × MaxFrame of the agent's
// memory and MaxConns descriptors; they can still fill every slot, which
// keeps agentctl out, not the agent's calls. The hello reports max_frame
// and idle_ms: the Client refuses to send a longer request and dials again
// after a quiet spell.
//
// # Security
//
// The socket is mode 0600, and on Linux each end checks the other's uid
// with SO_PEERCRED: only the agent's own user is served (root included in
// that rule: it is refused an agent of another user). Elsewhere the file
// mode is the only guard.
//
// # Caveats
//
//   - A socket path longer than the kernel's limit (108 bytes on Linux) is
//     reached through /proc/self/fd on Linux, and cannot be served elsewhere.
//   - Events are dropped, and counted, for a client that reads too slowly;
//     the agent never waits for a reader.
//   - Writes other than Resolve and a dry-run GC are not served: stop the
//     agent for gc, import and compact.
package inspect
