package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

// answer replies from a settled record.
func (m *Middleware) answer(w http.ResponseWriter, c *call, rec *journal.Record) {
	if m.answerApproval(w, c, rec) {
		return
	}
	switch rec.State {
	case journal.StateSucceeded:
		var e envelope
		err := parseEnvelope(rec.Output, &e)
		if errors.Is(err, errNotEnvelope) { // an operator's own output
			operatorResponse(rec.Output).write(w, m.o.ReplayedHeader)
			return
		}
		if err == nil && e.body == nil && e.sum != emptySum { // kept elsewhere: a blob, or only its hash
			e.body, err = m.fetchBlob(&e)
		}
		if err != nil {
			m.o.ErrorLog("idempotency: key %s (%s): %v", c.jkey, c.tool, err)
			writeProblem(w, http.StatusInternalServerError, ProblemBodyUnavailable,
				problem{Detail: err.Error(), Key: c.key, JournalKey: c.jkey.String()}, 0)
			return
		}
		if rw, ok := w.(ReplayWriter); ok {
			rw.WriteReplay(Replay{Status: e.status, Body: e.body, header: e.header, sorted: e.sorted, replayed: m.replayedB})
			return
		}
		e.write(w, m.replayed, e.body)
	case journal.StateUnknown:
		if m.reconciles(rec) { // and not yet past its settle window when m.step read it
			m.answerChecked(w, c, reissue.QuietAt(rec), "the first request with this key ended without a recorded answer ("+rec.ErrorMessage+")")
			return
		}
		m.answerUnknown(w, c, "the first request with this key ended without a recorded answer ("+rec.ErrorMessage+")")
	default: // failed or suppressed and not to be run again
		writeProblem(w, http.StatusInternalServerError, ProblemFailed, problem{
			Detail: rec.ErrorMessage, Key: c.key, JournalKey: c.jkey.String()}, 0)
	}
}

// fetchBlob returns the body e's record keeps in the blob store.
func (m *Middleware) fetchBlob(e *envelope) ([]byte, error) {
	if m.o.Blobs == nil || len(e.blob) == 0 {
		return nil, fmt.Errorf("the first answer's body was over MaxStoredBytes (%d) and no Options.Blobs kept it: only its SHA-256 is stored, and the handler is not run again", m.o.MaxStoredBytes)
	}
	b, err := m.o.Blobs.Get(context.Background(), string(e.blob), int64(m.o.MaxResponseBytes))
	if err == nil && sha256.Sum256(b) != e.sum {
		err = fmt.Errorf("blob %s does not match the stored sha256", e.blob)
	}
	return b, err
}

// emptySum is the SHA-256 of an empty body.
var emptySum = sha256.Sum256(nil)

// operatorResponse is 200 with an operator's own output.
func operatorResponse(out []byte) *response {
	ct := "application/octet-stream"
	if len(out) > 0 && json.Valid(out) {
		ct = "application/json"
	}
	return &response{Status: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: out}
}

// answerUnknown answers that c's key's outcome is for an operator.
func (m *Middleware) answerUnknown(w http.ResponseWriter, c *call, detail string) {
	writeProblem(w, http.StatusInternalServerError, ProblemOutcomeUnknown, problem{
		Detail: detail + "; an operator resolves it with: agentctl resolve " + c.jkey.String(),
		Key:    c.key, JournalKey: c.jkey.String()}, 0)
}

// A ReplayWriter is an http.ResponseWriter that sends a replayed answer
// itself (Fiber's fasthttp): a stored answer is handed whole to
// WriteReplay, every other answer goes through the ResponseWriter.
type ReplayWriter interface {
	http.ResponseWriter
	// WriteReplay sends r as the answer, its headers set as Header().Set
	// would, with Content-Length the length of r.Body. It is called at
	// most once, and nothing is written after it.
	WriteReplay(r Replay)
}

// A Replay is a stored answer for a ReplayWriter; its slices are the
// record's: do not modify or keep them.
type Replay struct {
	// Status is the first answer's status code.
	Status int
	// Body is the first answer's body, byte for byte.
	Body []byte

	header   []byte // the stored header lines, as parseEnvelope found them
	sorted   bool   // their names are in order: each name's lines are together
	replayed []byte // the replay mark's name, canonical form
}

// trueValue is the replay mark's value.
var trueValue = []byte("true")

// Header yields the answer's headers, a name's values one after another,
// then the replay mark ("true"), but no Content-Length.
func (r Replay) Header() iter.Seq2[[]byte, []byte] {
	return func(yield func(name, value []byte) bool) {
		for at := 0; at < len(r.header); {
			k, v, next := headerLine(r.header, at)
			switch {
			case omitted(k, r.replayed):
			case r.sorted:
				if !yield(k, v) {
					return
				}
			case !hasName(r.header[:at], k): // out of order: gathered at the first
				for i := at; i < len(r.header); {
					ki, vi, n := headerLine(r.header, i)
					if bytes.Equal(ki, k) && !yield(ki, vi) {
						return
					}
					i = n
				}
			}
			at = next
		}
		yield(r.replayed, trueValue)
	}
}

// headerLine returns the header line at at, and where the next begins.
func headerLine(lines []byte, at int) (name, value []byte, next int) {
	end := at + bytes.IndexByte(lines[at:], '\n')
	name, value, _ = bytes.Cut(lines[at:end], []byte(": "))
	return name, value, end + 1
}

// hasName reports whether one of lines is a header named name.
func hasName(lines, name []byte) bool {
	for at := 0; at < len(lines); {
		k, _, next := headerLine(lines, at)
		if bytes.Equal(k, name) {
			return true
		}
		at = next
	}
	return false
}

// omitted reports whether a stored header is left out of a replay.
func omitted(name, replayed []byte) bool {
	return bytes.EqualFold(name, []byte("Content-Length")) || bytes.EqualFold(name, replayed)
}
