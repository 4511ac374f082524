// Package agentonce opens an agent's journal and wires a
// [harness.Harness] to it for the life of a process: the one call most
// programs need.
//
//	h, err := agentonce.Open(ctx, "agent.journal", nil) // or a postgres:// URL
//	...
//	defer h.Close()
//
// Open opens the journal with journal.Open (a plain path is a bbolt file,
// this package links journal/bolt in) and wires beside the Harness what a
// long-running agent wants: the namespace from NamespaceEnv, a warning for
// a new random namespace (or a refusal, OpenOptions.RequireJournal), the
// agentctl socket and the background removal of expired records. The
// Harness's Close ends them and closes the journal. OpenJournal does the
// same for a server's journal, without a Harness. Everything else is
// package harness's; docs/harness.md is the long form.
//
// # Caveats
//
//   - This package links bbolt into every program that imports it; a
//     program that must not opens its store itself and uses harness.New.
//   - The namespace is a secret: whoever has it can predict the keys.
package agentonce
