package harness

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
)

// Errors returned by Register.
var (
	// ErrToolName is returned when a tool has no name.
	ErrToolName = errors.New("tool has no name")
	// ErrDuplicateTool is returned when a tool name is registered twice.
	ErrDuplicateTool = errors.New("tool already registered")
)

// Errors of a rejected call (Status Rejected).
var (
	// ErrClosed is returned for calls after Close.
	ErrClosed = errors.New("harness closed")
	// ErrInvalidInput is returned when a call's input is not valid JSON, is
	// too large or too deep, or does not fit the tool's schema. The wrapped
	// keyderive error says what and where.
	ErrInvalidInput = errors.New("invalid tool input")
	// ErrNoTurn is returned when a call has no Session or no Turn and no
	// StepKey: its key would merge every identical call of the session.
	ErrNoTurn = errors.New("call has no session or turn (and no step key)")
	// ErrUnknownTool is returned when a call names a tool that is not
	// registered; the error names it.
	ErrUnknownTool = errors.New("unknown tool")
)

// ErrLeaseLost is the cause of a flight's cancellation when its owner lost
// the intent's lease (fenced, or the journal unreachable).
var ErrLeaseLost = errors.New("lease lost")

// PanicError is a tool's (or its Reconcile hook's) panic, turned into an
// error; it reaches the caller wrapped in the Result's *OutcomeError.
type PanicError struct {
	// Tool is the tool that panicked.
	Tool string
	// Value is the value the tool passed to panic.
	Value any
	// Stack is the stack trace where the panic was recovered.
	Stack []byte
}

// Error names the tool and the panic value; the stack is in Stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}

// Unwrap returns Value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func newPanicError(tool string, v any) *PanicError {
	stack := debug.Stack()
	if i := bytes.IndexByte(stack, '\n'); i >= 0 {
		stack = stack[i+1:] // drop "goroutine N [running]:"
	}
	return &PanicError{Tool: tool, Value: v, Stack: stack}
}
