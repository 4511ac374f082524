package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
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

// escapeField keeps one value in one tab-separated field on one line, and
// keeps a terminal showing it as it is: backslash, tab, newline and
// carriage return become \\, \t, \n and \r, and what escapeText escapes is
// escaped as there.
func escapeField(s string) string {
	if isPlain(s, true) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			writeRune(&b, s, i, r)
		}
	}
	return b.String()
}

// escapeText makes a text that came from outside (a tool, tenant, session
// or turn name, which an MCP client or a model controls; an error text;
// an operator's reason) safe to print on a terminal or in a page: C0 and
// C1 control characters (ESC, which starts a terminal escape sequence,
// included) and DEL become \xHH, the bidirectional controls (U+202E and
// its kin, which reorder what follows), line and paragraph separators and
// U+FEFF become \uHHHH, and bytes that are not UTF-8 become \xHH. Tab
// and newline are kept; the caller decides what they mean.
func escapeText(s string) string {
	if isPlain(s, false) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == '\t' || r == '\n' {
			b.WriteRune(r)
			continue
		}
		writeRune(&b, s, i, r)
	}
	return b.String()
}

// unsafeRune reports whether r must not reach a terminal as it is.
func unsafeRune(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r) ||
		unicode.In(r, unicode.Zl, unicode.Zp) || r == '\uFEFF'
}

// isPlain reports whether s holds nothing to escape (field: for a field,
// where backslash, tab and newline are escaped too).
func isPlain(s string, field bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || (field && (r == '\\' || r == '\t' || r == '\n' || r == '\r')) {
			return false
		}
		if r != '\t' && r != '\n' && unsafeRune(r) {
			return false
		}
	}
	return true
}

// writeRune writes r, found at s[i], escaped if it must be.
func writeRune(b *strings.Builder, s string, i int, r rune) {
	switch {
	case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
		fmt.Fprintf(b, `\x%02x`, s[i]) // a byte that is not UTF-8
	case r < 0x100 && unsafeRune(r):
		fmt.Fprintf(b, `\x%02x`, r)
	case unsafeRune(r):
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		b.WriteRune(r)
	}
}

// rowWriter writes rows either as an aligned table (a terminal) or as
// tab-separated lines (anything else). Values are escaped so that a row
// stays one line and a terminal shows it as it is (escapeField).
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
		io.WriteString(w, escapeField(c))
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
