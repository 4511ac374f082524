package inspect

import "errors"

// Errors returned when connecting.
var (
	// ErrNoAgent is returned by Dial when no agent answers at the socket:
	// there is none, or it is a stale one left by an agent that died
	// (connecting is refused).
	ErrNoAgent = errors.New("no agent serves the journal")
	// ErrForeignUser is returned when the other end of the socket runs as
	// another user: the client refuses such an agent, and the server such
	// a client.
	ErrForeignUser = errors.New("the other end of the inspection socket is another user")
	// ErrVersion is returned when the agent and the client speak different
	// versions of the protocol.
	ErrVersion = errors.New("inspection protocol version mismatch")
	// ErrBusy is returned when the agent already serves as many
	// connections as it allows (ServerOptions.MaxConns).
	ErrBusy = errors.New("the agent serves its maximum of inspection connections")
)

// Errors returned after connecting.
var (
	// ErrAgentGone is returned when the connection ends before an answer
	// is complete: the agent died or closed its journal mid-answer.
	ErrAgentGone = errors.New("the agent went away mid-answer")
	// ErrNotServed is returned for a write the agent does not serve over
	// the socket (anything but Resolve and a dry-run GC). It wraps
	// journal.ErrInUse, which is what the file lock says too.
	ErrNotServed = errors.New("not served by the running agent")
	// ErrSocketInUse is returned by Listen when another live process
	// serves at the socket path, or a file that is not a socket is there.
	ErrSocketInUse = errors.New("inspection socket path in use")
	// ErrAnswerTooLong is returned when one message from the agent is
	// longer than the client reads (64 MiB): a record too large for the
	// socket, or not an agent of this protocol.
	ErrAnswerTooLong = errors.New("the agent's message is longer than the client reads")
)

// RemoteError is an error the agent reported for a request. It unwraps to
// the journal sentinel its code names (journal.ErrNotFound, …), so callers
// test it with errors.Is as they would a local store's error.
type RemoteError struct {
	Code    string
	Message string
	cause   error
}

// Error returns the agent's message.
func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel the code names, or nil.
func (e *RemoteError) Unwrap() error { return e.cause }
