package idempotency

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/keyderive"
)

// lookUp fingerprints the request and returns the settled record that
// answers it without a Begin (from answers, or a Get), or nil; then the
// canonical JSON body becomes the record's Input.
func (m *Middleware) lookUp(r *http.Request, c *call, body []byte) *journal.Record {
	bufp := inputPool.Get().(*[]byte)
	input, at, kind := m.fingerprintInput((*bufp)[:0], r, body)
	c.req.Fingerprint = fingerprint(input)
	now := time.Now()
	ans := m.answers.get(c.jkey, c.req.Fingerprint, now, m.o.TTL)
	if ans == nil && (m.readFirst || m.seen.has(c.jkey)) {
		if rec, ok := m.replayable(r.Context(), &c.req); ok {
			m.answers.put(&rec, now)
			ans = &rec
		}
	}
	if ans == nil && kind == kindJSON && len(input)-at <= m.o.MaxStoredBytes {
		// Its own copy: the store may keep the record it writes.
		c.req.Input = bytes.Clone(input[at:])
	}
	if cap(input) <= maxPooledInput {
		*bufp = input[:0]
		inputPool.Put(bufp)
	}
	return ans
}

// replayable reads req's record and reports whether it answers req.
func (m *Middleware) replayable(ctx context.Context, req *journal.BeginRequest) (journal.Record, bool) {
	rec, err := m.store.Get(ctx, req.Key)
	return rec, err == nil && answersRequest(&rec, req.Fingerprint, time.Now(), m.o.TTL) && !m.reconciles(&rec)
}

// seenKeys is a lossy table of the keys this Middleware began: a request
// for one is likely a retry, tried by a Get first (a guess, never an answer).
type seenKeys [seenSlots]atomic.Uint64

// seenSlots is the table's size: 32 KiB a Middleware.
const seenSlots = 1 << 12

// slot is k's place in the table and its tag (never zero) from its hash bytes.
func slot(k uuid.UUID) (int, uint64) {
	return int(binary.BigEndian.Uint16(k[:2])) & (seenSlots - 1), binary.BigEndian.Uint64(k[8:]) | 1
}

func (s *seenKeys) has(k uuid.UUID) bool {
	i, t := slot(k)
	return s[i].Load() == t
}

func (s *seenKeys) add(k uuid.UUID) {
	if i, t := slot(k); s[i].Load() != t {
		s[i].Store(t)
	}
}

// beginReplayer is a store whose Begin replays by one read (journal/redis).
type beginReplayer interface {
	BeginReplays() bool
}

// localReader is a store whose reads are local (bbolt, memory).
type localReader interface {
	LocalReads() bool
}

// replayReads reports whether every key's record is read before Begin: on
// a store whose Begin costs more than a read on a settled record.
func replayReads(store journal.Store) bool {
	if b, ok := store.(beginReplayer); ok && b.BeginReplays() {
		return false
	}
	if l, ok := store.(localReader); ok && l.LocalReads() {
		return false
	}
	return true
}

// answers is a lossy table of settled records this Middleware answered or
// wrote, by journal key, read without a lock. It is sound because it keeps
// only a known outcome not to be run again, which nothing changes before
// reissue.Request stops answering from it; never an unknown one.
type answers [answerSlots]atomic.Pointer[journal.Record]

// answerSlots and maxAnswerBytes bound answers: at most 8 MiB of outputs.
const (
	answerSlots    = 1 << 11
	maxAnswerBytes = 4 << 10
)

// answerSlot is k's place in the table (seenKeys uses bytes 0-1 and 8-15).
func answerSlot(k uuid.UUID) int { return int(binary.BigEndian.Uint16(k[2:4])) & (answerSlots - 1) }

// get returns the record kept for key when it answers fp now (shared: read
// it only), or nil.
func (a *answers) get(key uuid.UUID, fp keyderive.Fingerprint, now time.Time, ttl time.Duration) *journal.Record {
	r := a[answerSlot(key)].Load()
	if r == nil || r.Key != key || !answersRequest(r, fp, now, ttl) {
		return nil
	}
	return r
}

// put keeps a slim copy of rec when it may be answered from the table.
func (a *answers) put(rec *journal.Record, now time.Time) {
	switch rec.State {
	case journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed:
	default:
		return
	}
	if reissue.Request(rec, now, 0) != reissue.Answer || len(rec.Output) > maxAnswerBytes || rec.Expires.IsZero() {
		return
	}
	c := *rec
	c.Input, c.Attempts = nil, rec.Attempts[max(len(rec.Attempts)-1, 0):] // the last: reissue.Request reads its start
	a[answerSlot(rec.Key)].Store(&c)
}

// answersRequest reports whether rec answers a request with fingerprint fp
// at now without a Begin.
func answersRequest(rec *journal.Record, fp keyderive.Fingerprint, now time.Time, ttl time.Duration) bool {
	return (rec.Fingerprint == fp || rec.Fingerprint.IsZero()) && rec.State != journal.StateAwaiting &&
		reissue.Request(rec, now, ttl) == reissue.Answer
}
