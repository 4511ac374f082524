package idempotency

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// The table keeps a settled answer without the request's input and the
// attempts (a slot is bounded by its output), and keeps nothing it may
// not answer from: an output over maxAnswerBytes, an unknown outcome, a
// released failure, a record without an expiry.
func TestAnswersKeepOnlyWhatAnAnswerReads(t *testing.T) {
	now := time.Now()
	rec := func(key byte, st journal.State, out int) journal.Record {
		return journal.Record{Key: uuid.UUID{key}, State: st, Output: bytes.Repeat([]byte("o"), out),
			Input: bytes.Repeat([]byte("i"), 64<<10), Attempts: []journal.Attempt{{ID: "a1", Start: now}, {ID: "a2", Start: now}},
			Expires: now.Add(time.Hour)}
	}
	var a answers
	kept := rec(1, journal.StateSucceeded, maxAnswerBytes)
	a.put(&kept, now)
	got := a.get(kept.Key, kept.Fingerprint, now, time.Hour)
	if got == nil || !bytes.Equal(got.Output, kept.Output) {
		t.Fatalf("a succeeded answer of %d bytes was not kept", maxAnswerBytes)
	}
	if got.Input != nil || len(got.Attempts) != 1 || got.Attempts[0].ID != "a2" {
		t.Errorf("kept %d bytes of input and attempts %v; want no input and the last attempt", len(got.Input), got.Attempts)
	}
	released := rec(3, journal.StateFailed, 10)
	released.ErrorClass = ClassReleased
	noExpiry := rec(5, journal.StateSucceeded, 10)
	noExpiry.Expires = time.Time{}
	for what, r := range map[string]journal.Record{
		"an output over the bound": rec(2, journal.StateSucceeded, maxAnswerBytes+1),
		"a released failure":       released,
		"an unknown outcome":       rec(4, journal.StateUnknown, 10),
		"a record without expiry":  noExpiry,
		"a pending record":         rec(6, journal.StatePending, 10),
	} {
		a.put(&r, now)
		if a.get(r.Key, r.Fingerprint, now, time.Hour) != nil {
			t.Errorf("%s was kept", what)
		}
	}
}
