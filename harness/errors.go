package harness

import (
	"errors"
	"fmt"
)

// Errors returned by Register.
var (
	// ErrToolName is returned when a tool has no name.
	ErrToolName = errors.New("tool has no name")
	// ErrDuplicateTool is returned when a tool name is registered twice.
	ErrDuplicateTool = errors.New("tool already registered")
)

// Errors of a rejected call (Status Rejected: nothing recorded, tool not
// run).
var (
	// ErrClosed is returned for calls after Close.
	ErrClosed = errors.New("harness closed")
	// ErrInvalidInput is returned when a call's input is not valid JSON, is
	// too large or too deep, or does not fit the tool's schema. The wrapped
	// keyderive error says what and where.
	ErrInvalidInput = errors.New("invalid tool input")
	// ErrNoTurn is returned when a call has no Session or no Turn and no
	// StepKey: its key would merge every identical call of the session (or
	// of the tenant) into one intent, forever. An adapter that cannot tell
	// the user's turn must say so rather than pass an empty one.
	ErrNoTurn = errors.New("call has no session or turn (and no step key)")
)

// ErrLeaseLost is the cause of a flight's cancellation when its owner lost
// the intent's lease: a renewal was fenced (another owner or an operator
// took the intent) or the journal stayed unreachable until the lease ran
// out. The outcome cannot be recorded; the caller is told Unknown.
var ErrLeaseLost = errors.New("lease lost")

// UnknownToolError is returned when a call names a tool that is not
// registered.
type UnknownToolError struct {
	Tool string
}

// Error names the tool.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("harness: unknown tool %q (not registered)", e.Tool)
}

// PanicError is a tool's panic, turned into an error that carries the
// panic value and the goroutine's stack. It reaches the caller wrapped in
// the Result's *OutcomeError.
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
}

// Error names the tool and the panic value; the stack is in Stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}
