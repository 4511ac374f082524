package idempotency

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// answers is a lossy table of settled records this Middleware answered or
// wrote, by journal key: a retry of one is answered from it without a
// round trip to the store. A slot holds one record, replaced whole by the
// next record whose key falls in it; readers load it without a lock.
//
// It is sound because what it holds cannot change in any store before it
// expires: a record is kept only when settled with a known outcome
// (succeeded, failed, suppressed) and not to be run again (retakable),
// and such a record is only ever replaced by a Begin once it has expired
// (journal.Reissue), deleted by GC once it has expired, and never
// resolved (Resolve takes pending and unknown records); settling late or
// covering a lease only moves its expiry later. A record is answered from
// here on the same terms as replayable answers it from a Get, a minute
// before its expiry on this machine's clock at the latest; an unknown
// outcome, which an operator may resolve at any time, is never kept.
type answers [answerSlots]atomic.Pointer[journal.Record]

// answerSlots is the table's size, and maxAnswerBytes the largest stored
// output it keeps: at most 8 MiB of outputs a Middleware.
const (
	answerSlots    = 1 << 11
	maxAnswerBytes = 4 << 10
)

// answerSlot is k's place in the table. A journal key is a UUIDv5, so its
// bytes are a hash's; seenKeys uses bytes 0-1 and 8-15.
func answerSlot(k uuid.UUID) int { return int(binary.BigEndian.Uint16(k[2:4])) & (answerSlots - 1) }

// get returns the record kept for key when it answers a request with
// fingerprint fp now, or nil. The record is shared: read it only.
func (a *answers) get(key uuid.UUID, fp keyderive.Fingerprint, now time.Time) *journal.Record {
	r := a[answerSlot(key)].Load()
	if r == nil || r.Key != key || !answersRequest(r, fp, now) {
		return nil
	}
	return r
}

// put keeps a copy of rec when it may be answered from the table, without
// what an answer does not read (the request's input, the attempts), so
// that a slot holds at most maxAnswerBytes of output and a few strings.
// rec's output is shared with the copy: the caller must not change it.
func (a *answers) put(rec *journal.Record) {
	switch rec.State {
	case journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed:
	default:
		return
	}
	if retakable(rec) || len(rec.Output) > maxAnswerBytes || rec.Expires.IsZero() {
		return
	}
	c := *rec
	c.Input, c.Attempts = nil, nil
	a[answerSlot(rec.Key)].Store(&c)
}

// answersRequest reports whether the settled record rec answers a request
// with fingerprint fp as Begin would: it will not run again, it has the
// request's fingerprint (or none), and it is not near its expiry (judged
// on this clock, with a minute's margin for the store's). Anything else
// goes through Begin, which decides on the store's clock.
func answersRequest(rec *journal.Record, fp keyderive.Fingerprint, now time.Time) bool {
	return rec.State.Settled() && !retakable(rec) &&
		(rec.Fingerprint == fp || rec.Fingerprint.IsZero()) && now.Before(rec.Expires.Add(-time.Minute))
}
