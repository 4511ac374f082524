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
	// EventBeforeWriteAhead: the key is derived; the journal not yet asked.
	EventBeforeWriteAhead EventKind = iota + 1
	// EventAfterWriteAhead: the attempt is recorded; the tool is about to
	// run.
	EventAfterWriteAhead
	// EventAfterEffect: the tool returned; its outcome is not yet recorded.
	EventAfterEffect
	// EventAfterOutcome: the outcome is recorded.
	EventAfterOutcome
	// EventRetry: a failed attempt will be retried after Delay.
	EventRetry
	// EventInFlight: the intent is in flight elsewhere; waiting Delay.
	EventInFlight
	// EventTakeover: the intent was taken over from an expired lease.
	EventTakeover
	// EventReconcile: the tool's Reconcile hook was asked.
	EventReconcile
	// EventResult: the call is answered (Status and Source say how).
	EventResult
	// EventSettle: the harness waits Delay, a settle window, before asking
	// Reconcile.
	EventSettle
	// EventNewJournal: Open created the journal, outside any call; Err is
	// set when its namespace is new and random.
	EventNewJournal
	// EventNeedsPerson: the intent needs a person (an unknown outcome, or
	// an approval: Err says why and Command how), or, with Resolution set,
	// no longer does: an operator resolved it through this process.
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
	// CallID is ToolCall.ID: a flight's events carry its first caller's,
	// each call's EventResult its own.
	CallID string
	// ToolDescription is the registered tool's Description.
	ToolDescription string
	// Attempt is the attempt id, where one is running.
	Attempt string
	// Attempts counts the attempts so far.
	Attempts int
	// Class is the retry class of the failure behind the event.
	Class retryclass.Class
	// Delay is the wait before the next try (EventRetry, EventInFlight).
	Delay time.Duration
	// Status and Source are set on EventResult.
	Status Status
	Source Source
	// Err is the failure behind the event, if any.
	Err error
	// Command settles the intent (EventNeedsPerson).
	Command string
	// Resolution is the operator's verdict that ends an EventNeedsPerson.
	Resolution *journal.Resolution
}

// Observer receives every event, synchronously: it must be quick, safe for
// concurrent use, and must not call back into the Harness.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }
