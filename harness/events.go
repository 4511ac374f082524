package harness

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// EventKind names a point in the call path.
type EventKind uint8

const (
	// EventBeforeWriteAhead: the key is derived; the journal is not yet
	// asked.
	EventBeforeWriteAhead EventKind = iota + 1
	// EventAfterWriteAhead: the attempt is recorded (durably for Unkeyed
	// tools); the tool is about to run.
	EventAfterWriteAhead
	// EventAfterEffect: the tool returned; its outcome is not yet recorded.
	// Err (and Class) are set when the attempt failed.
	EventAfterEffect
	// EventAfterOutcome: the outcome is recorded.
	EventAfterOutcome
	// EventRetry: a failed attempt will be retried after Delay.
	EventRetry
	// EventInFlight: the intent is in flight elsewhere; waiting Delay.
	EventInFlight
	// EventTakeover: the intent was found pending with an expired lease (a
	// crash or a lost answer); its earlier outcome is unknown.
	EventTakeover
	// EventReconcile: the tool's Reconcile hook was asked.
	EventReconcile
	// EventResult: the call is answered (Status and Source say how).
	EventResult
	// EventSettle: an Unkeyed attempt ended without an answer; the harness
	// waits Delay, its settle window, before asking Reconcile.
	EventSettle
	// EventNewJournal: Open created the journal. Err is set when its
	// namespace is new and random, so that every key differs from an
	// earlier journal's. It is outside any call.
	EventNewJournal
	// EventNeedsPerson: the intent needs a person, or no longer does. With
	// Resolution nil, the call recorded an unknown outcome only a person
	// can settle (an Unkeyed tool without a Reconcile hook, or a hook that
	// cannot tell): Err says why and Command how; a re-issue that asks the
	// hook again and ends so reports it again; a call answered
	// AwaitingApproval reports it too, with the approve and reject
	// commands. With Resolution set, outside
	// any call, an operator resolved the intent through this process
	// (agentctl over package agentonce's socket).
	EventNeedsPerson
)

var eventNames = [...]string{"", "before-write-ahead", "after-write-ahead", "after-effect", "after-outcome",
	"retry", "in-flight", "takeover", "reconcile", "result", "settle", "new-journal", "needs-person"}

// String returns the event kind's name.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Event is one step of a call, as Observers and the log see it.
type Event struct {
	Kind    EventKind
	Tool    string
	Session string
	Turn    string
	Key     uuid.UUID
	// CallID is the model's tool-call id (ToolCall.ID), empty if the caller
	// gave none. The events of a flight carry its first caller's id; the
	// EventResult of each call joined to it carries that call's own.
	CallID string
	// ToolDescription is the registered tool's Description, empty for a
	// call refused before its tool was found.
	ToolDescription string
	// Attempt is the attempt id, where one is running.
	Attempt string
	// Attempts counts the attempts so far.
	Attempts int
	// Class is the retry class of the failure behind a retry, in-flight
	// wait or result.
	Class retryclass.Class
	// Delay is the wait before the next try (EventRetry, EventInFlight).
	Delay time.Duration
	// Status and Source are set on EventResult.
	Status Status
	Source Source
	// Err is the failure behind the event, if any.
	Err error
	// Command is the agentctl command that settles the intent
	// (EventNeedsPerson).
	Command string
	// Resolution is the operator's verdict that ends an EventNeedsPerson.
	Resolution *journal.Resolution
}

// Observer receives every event of every call, synchronously, on the
// call's goroutine (a background check's, on the check's: settle.go; an
// operator's resolve, on the socket's): it must be quick and safe for
// concurrent use. A check that outlives its caller reports its steps and
// EventAfterOutcome, but no second EventResult: the caller's InProgress
// was the call's result. It is the hook for metrics and for tests; an
// Observer may end the process (the crash tests do) but must not call
// back into the Harness.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }
