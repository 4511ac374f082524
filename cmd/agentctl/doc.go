// Agentctl inspects, replays and maintains agentonce journals: what the
// agent did, and what a restart would do.
//
// Usage:
//
//	agentctl COMMAND [flags] [args]
//
// The commands are ls, show, stats, derive, replay and queue (inspection:
// they open the journal read-only and never modify it), resolve, gc,
// compact and import (writes), and export. "agentctl help COMMAND" describes each;
// "agentctl help exit-codes" prints the exit-code table and "agentctl help
// json" the JSON schema.
//
// Every command takes the journal as --journal LOCATION or the
// AGENTONCE_JOURNAL environment variable: a bbolt file path, or a
// postgres:// (postgresql://) URL for the PostgreSQL store, whose "schema"
// query parameter names the schema (default "agentonce"; agentctl removes
// the parameter before connecting). A missing file, or a schema without a
// journal, is an error for every command (only "import --create" creates a
// journal), so a typo never turns into an empty journal.
//
// # Output
//
// On a terminal, reads print aligned tables in local time. Otherwise they
// print tab-separated lines with RFC 3339 UTC times, one record per line,
// in a fixed column order (backslash, tab, newline and carriage return in
// values are escaped as \\, \t, \n and \r; control and bidirectional
// characters as \xHH and \uHHHH, in every human-readable output, so that
// a tool name cannot drive the terminal). --json prints the documented
// schema: one record per line for ls and export, one object otherwise.
// Errors are one line on standard error, saying what is wrong and what to
// do next, and a documented exit code (errors.go).
//
// # Caveats
//
//   - On a bbolt journal, ls --session, replay and show read only what they
//     print (the journal keeps a session index in the file); queries across
//     sessions (ls, stats, gc) read every record into memory, about 4 s and
//     1 GiB per million records (BENCHMARKS.md).
//   - A bbolt journal is locked by the process that has it open for writing,
//     so inspecting a journal while an agent runs fails with "journal in use"
//     (exit 4) after --lock-timeout. Stop the agent, or export from it when
//     it is idle.
//   - On PostgreSQL, a writing command first opens the journal read-only to
//     check it exists (a writable open would create the schema): one more
//     connection per command.
//   - replay predicts the harness's decisions from the journal alone: a
//     tool's Reconcile hook (for unkeyed tools) is not visible to it, so such
//     intents are reported as blocked, which is what happens without a hook;
//     and it uses the effect kind each record kept, while the harness uses
//     the tool's current registration.
//   - compact replaces the file by rename; an agent that opened the old file
//     in the moment between the copy and the rename would write into the
//     replaced file. Stop every agent first.
//   - A terminal is recognized as a character device (no dependency on a
//     terminal package), so /dev/null counts as one: redirecting to it
//     gets the human format, and "import < /dev/null" is refused.
//   - import reads its input twice (check, then write); standard input is
//     first copied to a temporary file of mode 0600.
package main
