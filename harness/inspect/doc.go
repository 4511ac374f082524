// Package inspect is the local protocol by which a running agent answers
// agentctl: read-only inspection of its journal, operator resolution, and a
// stream of the harness's events, over a unix socket beside the journal.
//
// A bbolt journal is locked while its agent runs. The agent (agentonce.Open
// on a bbolt file) serves this protocol at SocketPath(journal),
// "<journal>.sock"; the Client is a journal.Store whose reads and Resolve
// travel over the socket, so agentctl's commands run unchanged against it.
// The package imports only journal and keyderive, never harness, so the
// arrows run one way (harness → inspect → journal). Its wire form,
// version 1, is JSON lines: a hello each way, then one request at a time
// (get, list, stats, gc_dry_run, resolve, events).
//
// The Server bounds what a client can make it hold (ServerOptions): a
// message of at most 1 MiB, the hello within 5 s, the next request within
// 2 min, at most 32 connections (one more closes the one idle longest, and
// is told ErrBusy only when all are answering). The socket is mode 0600,
// and on Linux each end checks the other's uid.
//
// docs/inspect.md has the long form: the messages, error codes, bounds and
// security.
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
