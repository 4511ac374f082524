// Package inspect is the local protocol by which a running agent answers
// agentctl: read-only inspection of its journal, operator resolution, and a
// stream of the harness's events, over a unix socket beside the journal
// (SocketPath), since a bbolt journal is locked while its agent runs. The
// Client is a journal.Store whose reads and Resolve travel over the
// socket. The wire form is JSON lines: a hello each way, then one request
// at a time.
//
// The Server bounds what a client can make it hold (ServerOptions). The
// socket is mode 0600, and on Linux each end checks the other's uid.
// docs/inspect.md has the long form.
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
