package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
)

// Exit codes. Every failure is one line on stderr and one of these codes;
// exitCodes is the table printed by "agentctl help exit-codes" and copied
// into README.md (a test keeps the two in agreement).
const (
	exitOK          = 0
	exitError       = 1  // anything not listed below (I/O, internal)
	exitUsage       = 2  // bad command, flag or argument
	exitNoJournal   = 3  // the journal file does not exist
	exitInUse       = 4  // the journal is locked by another process
	exitCorrupt     = 5  // not a journal, damaged, or written by a newer version
	exitNotFound    = 6  // no record for the key
	exitConflict    = 7  // resolve of a settled or in-flight record; approve/reject refused; import of a different record
	exitAgentGone   = 8  // the running agent went away mid-command; tail found no running agent
	exitUnreachable = 9  // the PostgreSQL server cannot be reached
	exitReplayRun   = 10 // replay: some intent would execute again, nothing is blocked
	exitReplayBlock = 11 // replay: some intent is blocked (unknown outcome, needs reconcile or resolve)
	exitQueued      = 12 // queue: some intent needs a person
)

var exitCodes = []struct {
	Code    int
	Meaning string
}{
	{exitOK, "success (replay: every intent would be answered from the journal or is in flight elsewhere)"},
	{exitError, "unexpected error (I/O, permissions, internal)"},
	{exitUsage, "usage: unknown command, bad flag or argument"},
	{exitNoJournal, "journal not found: the file does not exist, or the PostgreSQL schema holds no journal"},
	{exitInUse, "journal in use: another process holds its lock and serves this user no inspection socket (an agent of another user, or with inspection off); or a write the running agent does not serve (gc, import)"},
	{exitCorrupt, "journal corrupt, not a journal, or written by a newer version; or its running agent speaks another inspection protocol version"},
	{exitNotFound, "no record for the key (replay: no intent recorded for the session)"},
	{exitConflict, "conflict: resolve of a record that is settled or in flight; approve or reject of a record not awaiting approval, past its deadline or already approved, or approve of another input's fingerprint; import of a record that differs from the stored one, or of another journal's namespace"},
	{exitAgentGone, "agent gone: the running agent serving the journal went away mid-command (the output is incomplete), or tail found no running agent"},
	{exitUnreachable, "cannot reach the PostgreSQL server of a postgres:// journal (no server at the URL's host and port, or the name does not resolve)"},
	{exitReplayRun, "replay: at least one intent would execute again (retry with the same key, or anew after expiry); none is blocked"},
	{exitReplayBlock, "replay: at least one intent is blocked (outcome unknown: reconcile, or agentctl resolve)"},
	{exitQueued, "queue: at least one intent needs a person (the list says what each needs)"},
}

// cliError is an error with an exit code and a hint saying what to do
// next. Commands return it (or a journal sentinel, which exitCodeOf maps).
type cliError struct {
	code int
	err  error
	hint string
	// quiet errors print nothing: the command's output already said it
	// (replay's verdict).
	quiet bool
}

func (e *cliError) Error() string {
	if e.hint == "" {
		return e.err.Error()
	}
	return e.err.Error() + "; " + e.hint
}

func (e *cliError) Unwrap() error { return e.err }

// usageErrorf is a bad flag or argument.
func usageErrorf(format string, args ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCodeOf maps an error to its exit code.
func exitCodeOf(err error) int {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, journal.ErrInUse):
		return exitInUse
	case errors.Is(err, journal.ErrCorrupt), errors.Is(err, journal.ErrNewerVersion):
		return exitCorrupt
	case errors.Is(err, journal.ErrNotFound):
		return exitNotFound
	case errors.Is(err, journal.ErrNotResolvable), errors.Is(err, journal.ErrExists),
		errors.Is(err, journal.ErrNamespaceMismatch), errors.Is(err, journal.ErrFenced):
		return exitConflict
	case errors.Is(err, journal.ErrInvalid):
		return exitUsage
	case errors.Is(err, inspect.ErrAgentGone):
		return exitAgentGone
	}
	return exitError
}

// hintFor says what to do next for the journal's sentinel errors, when the
// command did not say already.
func hintFor(err error) string {
	var ce *cliError
	if errors.As(err, &ce) && ce.hint != "" {
		return ""
	}
	switch {
	case errors.Is(err, inspect.ErrNotServed):
		// A live agent holds the journal for good: waiting longer for its
		// lock cannot help.
		return "a live agent holds the journal, so a longer --lock-timeout would not help: " +
			"use what its socket serves (the reads, resolve, gc --dry-run), or stop the agent and run the command again"
	case errors.Is(err, journal.ErrInUse):
		return "stop the process using it (an agent holds it open), or retry with a longer --lock-timeout"
	case errors.Is(err, journal.ErrCorrupt):
		return "check --journal points at an agentonce journal; restore it from a backup (agentctl export) if it is damaged"
	case errors.Is(err, journal.ErrNewerVersion):
		return "use the agentctl of the agentonce version that wrote it"
	case errors.Is(err, journal.ErrNotFound):
		return "check the key (agentctl ls lists them)"
	case errors.Is(err, journal.ErrNotResolvable):
		return "only pending or unknown records can be resolved (agentctl show KEY)"
	case errors.Is(err, inspect.ErrAgentGone):
		return "the agent stopped or died; run the command again (it reads the file once the agent is gone)"
	}
	return ""
}

// errorLine is the one line printed on stderr for err.
func errorLine(cmd string, err error) string {
	msg := err.Error()
	if h := hintFor(err); h != "" {
		msg += "; " + h
	}
	prefix := "agentctl: "
	if cmd != "" {
		prefix = "agentctl " + cmd + ": "
	}
	// One line, whatever the wrapped errors held, and nothing a terminal
	// would act on (a tool name may carry an escape sequence).
	return prefix + escapeText(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(msg))
}

func isNotFound(err error) bool { return errors.Is(err, journal.ErrNotFound) }
