// Package agentonce opens an agent's journal and wires a
// [harness.Harness] to it for the life of a process: the one call most
// programs need.
//
//	h, err := agentonce.Open(ctx, "agent.journal", nil) // or a postgres:// URL
//	...
//	defer h.Close()
//
// Open opens the journal with journal.Open: a plain path is a bbolt file,
// created if missing (this package links journal/bolt in); a postgres://
// URL opens the PostgreSQL store once the program imports
// journal/postgres. Beside the Harness it wires what a long-running agent
// on a bbolt file wants: the namespace from the environment (NamespaceEnv)
// when none is configured, a warning when a journal is created with a new
// random namespace, or a refusal to create one (OpenOptions.RequireJournal),
// the agentctl socket (OpenOptions.Inspect) and the background removal of
// expired records (OpenOptions.GCEvery). The Harness's Close ends them and
// closes the journal. OpenJournal does the same for a server's journal
// (package idempotency), without a Harness.
//
// Everything else — registering tools, calling them, what a call answers —
// is package harness's; docs/harness.md is the long form.
//
// # Caveats
//
//   - This package links bbolt into every program that imports it. A
//     program on PostgreSQL that must not link it opens its store with
//     journal.Open (or postgres.Open) and wraps it with harness.New; it then
//     sets the namespace itself and closes the store after the Harness.
//   - The namespace is a secret: whoever has it can predict the
//     deployment's keys.
package agentonce
