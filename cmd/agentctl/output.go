package main

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// humanTime formats t for a person: local time (env.loc), to the
// millisecond (attempts a few milliseconds apart must not read alike).
func (e *env) humanTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(e.loc).Format("2006-01-02 15:04:05.000")
}

// machineTime formats t for tab-separated output: RFC 3339 in UTC with as
// many fractional digits as needed; the zero time is the empty string.
func machineTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// fieldEscaper keeps one value in one tab-separated field on one line.
var fieldEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// rowWriter writes rows either as an aligned table (a terminal) or as
// tab-separated lines (anything else). Values are escaped so that a row
// stays one line: backslash, tab, newline and carriage return become \\,
// \t, \n and \r.
type rowWriter struct {
	human bool
	// dash shows empty values as "-" (for people: an empty cell is easy
	// to misread in an aligned table).
	dash bool
	tw   *tabwriter.Writer
	bw   *bufio.Writer
}

func newRowWriter(w io.Writer, human bool) *rowWriter {
	if human {
		return &rowWriter{human: true, tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	}
	return &rowWriter{bw: bufio.NewWriterSize(w, 64<<10)}
}

func (r *rowWriter) row(cols ...string) {
	var w io.Writer = r.bw
	if r.human {
		w = r.tw
	}
	for i, c := range cols {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		if c == "" && r.dash {
			c = "-"
		}
		io.WriteString(w, fieldEscaper.Replace(c))
	}
	io.WriteString(w, "\n")
}

func (r *rowWriter) flush() error {
	if r.human {
		return r.tw.Flush()
	}
	return r.bw.Flush()
}

// jsonWriter writes one JSON value per line, without HTML escaping (so
// embedded tool output keeps its bytes).
type jsonWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

func newJSONWriter(w io.Writer) *jsonWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonWriter{bw: bw, enc: enc}
}

func (j *jsonWriter) write(v any) error { return j.enc.Encode(v) }
func (j *jsonWriter) flush() error      { return j.bw.Flush() }
