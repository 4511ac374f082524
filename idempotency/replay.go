package idempotency

import (
	"bytes"
	"iter"
	"net/http"
)

// A ReplayWriter is an http.ResponseWriter that sends a replayed answer
// itself, for a server whose response is not an http.Header and a stream
// (Fiber's fasthttp, for one): when the ResponseWriter the middleware
// answers on is a ReplayWriter, a stored answer is handed whole to
// WriteReplay, without being built into w.Header() first. Every other
// answer (the first one, a problem) goes through Header, WriteHeader and
// Write.
type ReplayWriter interface {
	http.ResponseWriter
	// WriteReplay sends r as the answer, in place of any header the
	// writer holds for the names r.Header yields (as Header().Set would),
	// with Content-Length the length of r.Body. It is called at most once,
	// and nothing is written to the ResponseWriter after it.
	WriteReplay(r Replay)
}

// A Replay is a stored answer on its way to a ReplayWriter. Its slices
// alias the journal record: they are not to be modified, nor kept after
// WriteReplay returns.
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

// Header yields the answer's headers, name and value: the stored ones,
// the lines of a name one after another, then the replay mark (the
// Options.ReplayedHeader, "true"). It yields no Content-Length: that is
// Body's length. A writer that sets a name's first value and adds the
// others writes the answer as the net/http path does.
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
			case !hasName(r.header[:at], k):
				// Lines out of order (an operator's hand-made envelope):
				// a name's values are gathered at its first line.
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

// headerLine returns the name and value of the header line at at in
// lines (parseEnvelope checked them: "Name: value\n"), and where the next
// line begins.
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

// omitted reports whether a stored header named name is left out of a
// replay: the writer's Content-Length, and the replay mark, are its own.
func omitted(name, replayed []byte) bool {
	return bytes.EqualFold(name, []byte("Content-Length")) || bytes.EqualFold(name, replayed)
}
