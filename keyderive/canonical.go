package keyderive

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// Canonicalize returns the canonical form (RFC 8785, JCS) of the JSON value
// in input, with the integer departure described in the package doc. It
// fails with a *SyntaxError, wrapping one of ErrTooLarge, ErrTooDeep,
// ErrSyntax, ErrDuplicateKey, ErrInvalidUTF8 or ErrNumber, that names the
// byte offset where input went wrong. A nil opts means default limits.
func Canonicalize(input []byte, opts *Options) ([]byte, error) {
	return AppendCanonical(nil, input, opts)
}

// AppendCanonical appends the canonical form of input to dst, like the
// strconv Append functions; on error it returns dst unchanged in length.
// dst's spare capacity must not overlap input. See Canonicalize.
func AppendCanonical(dst, input []byte, opts *Options) ([]byte, error) {
	maxBytes, maxDepth := opts.limits()
	if len(input) > maxBytes {
		return dst, &SyntaxError{
			Offset: int64(maxBytes),
			Msg:    fmt.Sprintf("input is %d bytes, more than the maximum of %d", len(input), maxBytes),
			Err:    ErrTooLarge,
		}
	}
	out := dst
	if out == nil {
		// Rarely longer than the input: one allocation usually suffices.
		out = make([]byte, 0, len(input))
	}
	c := canonPool.Get().(*canonicalizer)
	c.in, c.pos, c.depth, c.maxDepth = input, 0, 0, maxDepth
	out, err := c.document(out)
	c.release()
	if err != nil {
		return dst, err
	}
	return out, nil
}

// canonPool recycles scratch state: a call allocates only its output.
var canonPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// canonicalizer is a single-pass JSON validator that writes canonical output
// as it reads; an object's members are sorted in place afterwards, when
// they were not in order. The output buffer is passed along rather than
// kept in a field: storing a slice in a heap object costs a write barrier.
type canonicalizer struct {
	in       []byte
	pos      int // next unread byte of in
	depth    int
	maxDepth int
	// members is a stack of the members of the objects being read.
	members []member
	// scratch holds an object's unsorted output while it is rewritten.
	scratch []byte
	// digits holds a number's significant decimal digits (number.go).
	digits []byte
}

// member locates one object member in the output.
type member struct {
	start  int // offset of the key's opening quote in out
	keyEnd int // offset just past the key's closing quote
	end    int // offset just past the value
	inOff  int // offset of the key's opening quote in the input, for errors
	// prefix is the name's first 8 bytes, big-endian, zero-padded, when
	// plain ASCII (then prefixes order as names do); else noPrefix.
	prefix uint64
}

const noPrefix = ^uint64(0)

// namePrefix computes member.prefix for a canonical escaped name.
func namePrefix(name []byte) uint64 {
	var p uint64
	for i := 0; i < 8; i++ {
		p <<= 8
		if i < len(name) {
			b := name[i]
			if b >= utf8.RuneSelf || b == '\\' {
				return noPrefix
			}
			p |= uint64(b)
		}
	}
	return p
}

// compareMembers orders two members by name (see compareKeys), deciding
// by their prefixes when it can.
func compareMembers(out []byte, a, b *member) int {
	if a.prefix != b.prefix && a.prefix != noPrefix && b.prefix != noPrefix {
		return cmp.Compare(a.prefix, b.prefix)
	}
	return compareKeys(out[a.start+1:a.keyEnd-1], out[b.start+1:b.keyEnd-1])
}

// Bounds on the scratch memory a pooled canonicalizer keeps.
const (
	maxRetainedBytes   = 64 << 10
	maxRetainedMembers = 2048
)

func (c *canonicalizer) release() {
	c.in = nil
	if cap(c.scratch) > maxRetainedBytes {
		c.scratch = nil
	}
	if cap(c.digits) > maxRetainedBytes {
		c.digits = nil
	}
	if cap(c.members) > maxRetainedMembers {
		c.members = nil
	}
	c.members = c.members[:0]
	canonPool.Put(c)
}

func (c *canonicalizer) fail(off int, sentinel error, format string, args ...any) error {
	return &SyntaxError{Offset: int64(off), Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// describe names the byte at off for an error message.
func (c *canonicalizer) describe(off int) string {
	if off >= len(c.in) {
		return "end of input"
	}
	b := c.in[off]
	if b < utf8.RuneSelf {
		return fmt.Sprintf("character %q", rune(b))
	}
	return fmt.Sprintf("byte 0x%02x", b)
}

func (c *canonicalizer) document(out []byte) ([]byte, error) {
	c.skipSpace()
	out, err := c.value(out)
	if err != nil {
		return out, err
	}
	c.skipSpace()
	if c.pos < len(c.in) {
		return out, c.fail(c.pos, ErrSyntax, "unexpected %s after the top-level value", c.describe(c.pos))
	}
	return out, nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\r' || b == '\t' }

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) && isSpace(c.in[c.pos]) {
		c.pos++
	}
}

// value reads one JSON value starting at c.pos (not whitespace).
func (c *canonicalizer) value(out []byte) ([]byte, error) {
	if c.pos >= len(c.in) {
		return out, c.fail(c.pos, ErrSyntax, "unexpected end of input, looking for a JSON value")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(out)
	case b == '[':
		return c.array(out)
	case b == '"':
		return c.str(out)
	case b == 't':
		return c.literal(out, "true")
	case b == 'f':
		return c.literal(out, "false")
	case b == 'n':
		return c.literal(out, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(out)
	default:
		return out, c.fail(c.pos, ErrSyntax, "unexpected %s, looking for a JSON value", c.describe(c.pos))
	}
}

func (c *canonicalizer) literal(out []byte, lit string) ([]byte, error) {
	end := c.pos + len(lit)
	if end > len(c.in) || string(c.in[c.pos:end]) != lit {
		// Point at the first byte that differs.
		i := c.pos
		for i < len(c.in) && i-c.pos < len(lit) && c.in[i] == lit[i-c.pos] {
			i++
		}
		return out, c.fail(i, ErrSyntax, "unexpected %s in literal %s", c.describe(i), lit)
	}
	c.pos = end
	return append(out, lit...), nil
}

// open enters the array or object at c.pos, writes its opening byte, and
// reports whether it is empty: then its closing byte is read and written.
func (c *canonicalizer) open(out []byte, close byte) ([]byte, bool, error) {
	if c.depth++; c.depth > c.maxDepth {
		return out, false, c.fail(c.pos, ErrTooDeep, "nesting deeper than the maximum depth of %d", c.maxDepth)
	}
	out = append(out, c.in[c.pos])
	c.pos++
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == close {
		c.pos++
		c.depth--
		return append(out, close), true, nil
	}
	return out, false, nil
}

func (c *canonicalizer) array(out []byte) ([]byte, error) {
	out, empty, err := c.open(out, ']')
	if err != nil || empty {
		return out, err
	}
	for {
		if out, err = c.value(out); err != nil {
			return out, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return out, c.fail(c.pos, ErrSyntax, "unexpected end of input in array, looking for ',' or ']'")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			out = append(out, ',')
			c.skipSpace()
		case ']':
			c.pos++
			c.depth--
			return append(out, ']'), nil
		default:
			return out, c.fail(c.pos, ErrSyntax, "unexpected %s in array, looking for ',' or ']'", c.describe(c.pos))
		}
	}
}

func (c *canonicalizer) object(out []byte) ([]byte, error) {
	out, empty, err := c.open(out, '}')
	if err != nil || empty {
		return out, err
	}
	body, base := len(out), len(c.members)
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return out, c.fail(c.pos, ErrSyntax, "unexpected %s in object, looking for a member name string", c.describe(c.pos))
		}
		m := member{start: len(out), inOff: c.pos}
		if out, err = c.str(out); err != nil {
			return out, err
		}
		m.keyEnd = len(out)
		m.prefix = namePrefix(out[m.start+1 : m.keyEnd-1])
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return out, c.fail(c.pos, ErrSyntax, "unexpected %s after object member name, looking for ':'", c.describe(c.pos))
		}
		c.pos++
		out = append(out, ':')
		c.skipSpace()
		if out, err = c.value(out); err != nil {
			return out, err
		}
		m.end = len(out)
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return out, c.fail(c.pos, ErrSyntax, "unexpected end of input in object, looking for ',' or '}'")
		}
		if b := c.in[c.pos]; b == ',' {
			c.pos++
			out = append(out, ',')
			c.skipSpace()
			continue
		} else if b != '}' {
			return out, c.fail(c.pos, ErrSyntax, "unexpected %s in object, looking for ',' or '}'", c.describe(c.pos))
		}
		c.pos++
		break
	}
	err = c.sortMembers(out, body, c.members[base:])
	c.members = c.members[:base]
	if err != nil {
		return out, err
	}
	c.depth--
	return append(out, '}'), nil
}

// sortMembers puts the members of the object whose body starts at
// out[body] in RFC 8785 order, in place, and rejects duplicate names.
// Sorted input costs one comparison per member and no copying.
func (c *canonicalizer) sortMembers(out []byte, body int, ms []member) error {
	sorted := true
	for i := 1; i < len(ms) && sorted; i++ {
		switch compareMembers(out, &ms[i-1], &ms[i]) {
		case 0:
			return c.duplicate(out, ms[i-1], ms[i])
		case 1:
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	if len(ms) <= 16 {
		// Insertion sort, for small objects: no indirect calls. Every
		// pair of final neighbours is compared, so duplicates are found.
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			j := i
			for ; j > 0; j-- {
				r := compareMembers(out, &ms[j-1], &m)
				if r == 0 {
					return c.duplicate(out, ms[j-1], m)
				}
				if r < 0 {
					break
				}
				ms[j] = ms[j-1]
			}
			ms[j] = m
		}
	} else {
		slices.SortFunc(ms, func(a, b member) int { return compareMembers(out, &a, &b) })
		for i := 1; i < len(ms); i++ {
			if compareMembers(out, &ms[i-1], &ms[i]) == 0 {
				return c.duplicate(out, ms[i-1], ms[i])
			}
		}
	}
	c.scratch = append(c.scratch[:0], out[body:]...)
	w := body
	for i, m := range ms {
		if i > 0 {
			out[w] = ','
			w++
		}
		w += copy(out[w:], c.scratch[m.start-body:m.end-body])
	}
	return nil
}

func (c *canonicalizer) duplicate(out []byte, a, b member) error {
	later := max(a.inOff, b.inOff)
	name := out[b.start:b.keyEnd]
	const maxShown = 64
	if len(name) > maxShown {
		name = append(name[:maxShown:maxShown], `..."`...)
	}
	return c.fail(later, ErrDuplicateKey, "duplicate object member name %s", name)
}

// compareKeys orders two member names, each in its canonical escaped form
// without quotes, by their UTF-16 code units as RFC 8785 requires: -1, 0
// or +1. UTF-8 byte order is code point order, which agrees with UTF-16
// order except that supplementary characters sort before U+E000..U+FFFF in
// UTF-16; and escapes must be compared as the characters they stand for.
func compareKeys(a, b []byte) int {
	i := 0
	n := min(len(a), len(b))
	for i < n && a[i] == b[i] && a[i] != '\\' {
		i++
	}
	for i < len(a) && i < len(b) {
		ca, cb := a[i], b[i]
		if ca == cb && ca != '\\' {
			i++
			continue
		}
		if ca < utf8.RuneSelf && cb < utf8.RuneSelf && ca != cb && ca != '\\' && cb != '\\' {
			return cmp.Compare(ca, cb) // two plain ASCII characters
		}
		if ca == cb { // both escapes: compare what they stand for
			ra, na := decodeCanonical(a[i:])
			rb, nb := decodeCanonical(b[i:])
			if ra != rb || na != nb { // (equal runes escape alike)
				return compareUTF16(ra, rb)
			}
			i += na
			continue
		}
		if ca >= 0x80 && ca < 0xC0 && cb >= 0x80 && cb < 0xC0 {
			// Inside two UTF-8 sequences with the same lead byte: the
			// same length and the same UTF-16 class, so bytes decide.
			return cmp.Compare(ca, cb)
		}
		ra, _ := decodeCanonical(a[i:])
		rb, _ := decodeCanonical(b[i:])
		return compareUTF16(ra, rb)
	}
	return cmp.Compare(len(a)-i, len(b)-i)
}

// decodeCanonical decodes the first character of a canonically escaped
// string and returns it with its encoded length.
func decodeCanonical(s []byte) (rune, int) {
	if s[0] != '\\' {
		if s[0] < utf8.RuneSelf {
			return rune(s[0]), 1
		}
		return utf8.DecodeRune(s)
	}
	switch s[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u': // \u00XX: only control characters are escaped this way
		return rune(unhex(s[4])<<4 | unhex(s[5])), 6
	default: // \" and \\
		return rune(s[1]), 2
	}
}

// compareUTF16 orders two code points by their UTF-16 encodings.
func compareUTF16(a, b rune) int {
	if (a >= 0x10000) != (b >= 0x10000) {
		// One supplementary (a surrogate pair, 0xD800..0xDBFF first) and
		// one BMP character: the pair sorts first against U+E000..U+FFFF.
		if a >= 0x10000 {
			if b >= 0xE000 {
				return -1
			}
			return 1
		}
		if a >= 0xE000 {
			return 1
		}
		return -1
	}
	return cmp.Compare(a, b)
}

func unhex(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// strSafe marks the bytes a string copies through unchanged: printable
// ASCII other than '"' and '\\'.
var strSafe = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// str reads a string starting at its opening quote and writes it with
// RFC 8785's minimal escaping.
func (c *canonicalizer) str(out []byte) ([]byte, error) {
	in := c.in
	pos := c.pos + 1
	out = append(out, '"')
	for {
		start := pos
		for pos < len(in) && strSafe[in[pos]] {
			pos++
		}
		out = append(out, in[start:pos]...)
		if pos >= len(in) {
			return out, c.fail(pos, ErrSyntax, "unexpected end of input in string")
		}
		switch b := in[pos]; {
		case b == '"':
			c.pos = pos + 1
			return append(out, '"'), nil
		case b == '\\':
			var n int
			var err error
			if out, n, err = c.escape(out, pos); err != nil {
				return out, err
			}
			pos += n
		case b < 0x20:
			return out, c.fail(pos, ErrSyntax, "unescaped control character %U in string", rune(b))
		default:
			r, size := utf8.DecodeRune(in[pos:])
			if r == utf8.RuneError && size == 1 {
				return out, c.fail(pos, ErrInvalidUTF8, "invalid UTF-8 byte 0x%02x in string", b)
			}
			out = append(out, in[pos:pos+size]...)
			pos += size
		}
	}
}

// escape writes canonically the escape sequence at in[pos] (a backslash)
// and returns its length.
func (c *canonicalizer) escape(out []byte, pos int) ([]byte, int, error) {
	in := c.in
	if pos+1 >= len(in) {
		return out, 0, c.fail(pos+1, ErrSyntax, "unexpected end of input in string escape")
	}
	switch e := in[pos+1]; e {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return append(out, '\\', e), 2, nil
	case '/':
		return append(out, '/'), 2, nil
	case 'u':
		r, err := c.hex4(pos)
		if err != nil {
			return out, 0, err
		}
		n := 6
		if r >= 0xD800 && r <= 0xDFFF {
			bad := r >= 0xDC00 || pos+12 > len(in) || in[pos+6] != '\\' || in[pos+7] != 'u'
			if !bad {
				lo, err := c.hex4(pos + 6)
				if err != nil {
					return out, 0, err
				}
				bad = lo < 0xDC00 || lo > 0xDFFF
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				n = 12
			}
			if bad {
				return out, 0, c.fail(pos, ErrInvalidUTF8, "unpaired UTF-16 surrogate %s in string", in[pos:pos+6])
			}
		}
		return appendRune(out, r), n, nil
	default:
		return out, 0, c.fail(pos+1, ErrSyntax, "invalid escape %s in string", c.describe(pos+1))
	}
}

// hex4 decodes the four hex digits of the \u escape at in[pos].
func (c *canonicalizer) hex4(pos int) (rune, error) {
	if pos+6 > len(c.in) {
		return 0, c.fail(pos, ErrSyntax, "unexpected end of input in \\u escape")
	}
	var r rune
	for i := pos + 2; i < pos+6; i++ {
		d := unhex(c.in[i])
		if d < 0 {
			return 0, c.fail(i, ErrSyntax, "invalid %s in \\u escape, want a hex digit", c.describe(i))
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

// appendRune writes one decoded string character with RFC 8785's minimal
// escaping (only '"', '\\' and control characters).
func appendRune(out []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r))
	case r >= 0x20:
		return utf8.AppendRune(out, r)
	case r == '\b':
		return append(out, '\\', 'b')
	case r == '\f':
		return append(out, '\\', 'f')
	case r == '\n':
		return append(out, '\\', 'n')
	case r == '\r':
		return append(out, '\\', 'r')
	case r == '\t':
		return append(out, '\\', 't')
	}
	const hexDigits = "0123456789abcdef"
	return append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
}
