package inspect

import "errors"

// Errors returned when connecting.
var (
	// ErrNoAgent is returned by Dial when no agent answers at the socket.
	ErrNoAgent = errors.New("no agent serves the journal")
	// ErrForeignUser is returned when the other end of the socket runs as
	// another user.
	ErrForeignUser = errors.New("the other end of the inspection socket is another user")
	// ErrVersion is returned when the two ends speak different versions.
	ErrVersion = errors.New("inspection protocol version mismatch")
	// ErrBusy is returned when the agent already serves as many
	// connections as it allows (ServerOptions.MaxConns).
	ErrBusy = errors.New("the agent serves its maximum of inspection connections")
)

// Errors returned after connecting.
var (
	// ErrAgentGone is returned when the connection ends mid-answer.
	ErrAgentGone = errors.New("the agent went away mid-answer")
	// ErrNotServed is returned, with journal.ErrInUse, for a write the
	// agent does not serve (anything but Resolve and a dry-run GC).
	ErrNotServed = errors.New("not served by the running agent")
	// ErrSocketInUse is returned by Listen when another live process
	// serves at the socket path, or a file that is not a socket is there.
	ErrSocketInUse = errors.New("inspection socket path in use")
	// ErrAnswerTooLong is returned when one message from the agent is
	// longer than the client reads (64 MiB).
	ErrAnswerTooLong = errors.New("the agent's message is longer than the client reads")
)

// RemoteError is an agent's error; it unwraps to the sentinel it names.
type RemoteError struct {
	Code    string
	Message string
	cause   error
}

// Error returns the agent's message.
func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel the code names, or nil.
func (e *RemoteError) Unwrap() error { return e.cause }
