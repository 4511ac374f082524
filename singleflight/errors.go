package singleflight

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrGoexit is returned to every caller that joined a flight whose fn
	// called [runtime.Goexit] (as t.FailNow and t.SkipNow do). The caller
	// that started the flight gets no error: its goroutine exits.
	ErrGoexit = errors.New("singleflight: fn called runtime.Goexit")

	// ErrAbandoned is the cause of a flight's context when every caller
	// waiting on the flight has left. The cause also wraps the last
	// leaver's own cause, so errors.Is finds context.DeadlineExceeded too.
	ErrAbandoned = errors.New("singleflight: every caller left the flight")
)

// PanicError is returned to every caller of a flight whose fn panicked.
// It carries what fn panicked with and the stack of the panicking goroutine.
type PanicError struct {
	// Value is the value fn passed to panic.
	Value any
	// Stack is the stack trace taken where the panic was recovered, without
	// the goroutine header line (that goroutine may be gone by the time the
	// error is read).
	Stack []byte
}

// Error returns the panic value. The stack is left out so that the message
// stays short enough to log or to hand to a model; read Stack for it.
func (p *PanicError) Error() string {
	return fmt.Sprintf("singleflight: fn panicked: %v", p.Value)
}

// Unwrap returns Value if it is an error, so that errors.Is and errors.As
// see through a panic(err).
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

func newPanicError(v any) *PanicError {
	stack := debug.Stack()
	if i := bytes.IndexByte(stack, '\n'); i >= 0 {
		stack = stack[i+1:] // drop "goroutine N [running]:"
	}
	return &PanicError{Value: v, Stack: stack}
}
