package keyderive

import (
	"cmp"
	"math"
	"strconv"
)

// number reads a JSON number at c.pos and writes its canonical form.
func (c *canonicalizer) number(out []byte) ([]byte, error) {
	in := c.in
	start := c.pos
	pos := start
	if in[pos] == '-' {
		pos++
	}
	intStart := pos
	switch {
	case pos >= len(in) || !isDigit(in[pos]):
		return out, c.fail(pos, ErrSyntax, "unexpected %s in number, looking for a digit", c.describe(pos))
	case in[pos] == '0':
		pos++
	default:
		for pos < len(in) && isDigit(in[pos]) {
			pos++
		}
	}
	intEnd := pos
	fracStart, fracEnd := pos, pos
	if pos < len(in) && in[pos] == '.' {
		pos++
		fracStart = pos
		for pos < len(in) && isDigit(in[pos]) {
			pos++
		}
		if pos == fracStart {
			return out, c.fail(pos, ErrSyntax, "unexpected %s in number after '.', looking for a digit", c.describe(pos))
		}
		fracEnd = pos
	}
	exp := 0
	if pos < len(in) && (in[pos] == 'e' || in[pos] == 'E') {
		pos++
		neg := false
		if pos < len(in) && (in[pos] == '+' || in[pos] == '-') {
			neg = in[pos] == '-'
			pos++
		}
		expStart := pos
		for pos < len(in) && isDigit(in[pos]) {
			// Saturate: beyond ±1e9 the value is out of range or zero
			// whatever the mantissa (the input is at most a few MiB).
			if exp < 1e9 {
				exp = exp*10 + int(in[pos]-'0')
			}
			pos++
		}
		if pos == expStart {
			return out, c.fail(pos, ErrSyntax, "unexpected %s in number exponent, looking for a digit", c.describe(pos))
		}
		if neg {
			exp = -exp
		}
	} else if fracEnd == intEnd && intEnd-intStart <= 15 {
		// Fast path: a plain integer below 10^15 is exactly a float64 and
		// ES6 writes it as its digits; only -0 changes.
		c.pos = pos
		if intEnd-intStart == 1 && in[intStart] == '0' {
			out = append(out, '0')
		} else {
			out = append(out, in[start:pos]...)
		}
		return out, nil
	}
	c.pos = pos
	return c.numberSlow(out, in[start:pos], start, in[intStart:intEnd], in[fracStart:fracEnd], exp)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// maxSafe is 2^53, the largest integer below which every integer is
// exactly a float64.
const maxSafe = "9007199254740992"

// numberSlow canonicalizes a number token given its integer digits, fraction
// digits and exponent.
//
// Integers whose magnitude is above 2^53 and whose ES6 form would not
// denote exactly the same integer, and non-integers above 2^53, are
// written as their exact decimal digits instead (see the package doc);
// everything else follows RFC 8785.
func (c *canonicalizer) numberSlow(out, tok []byte, off int, intDigits, fracDigits []byte, exp int) ([]byte, error) {
	// The exact value is 0.D × 10^point, with D the significant digits.
	d := append(c.digits[:0], intDigits...)
	d = append(d, fracDigits...)
	c.digits = d[:0] // keep the grown buffer, from its start
	lead := 0
	for lead < len(d) && d[lead] == '0' {
		lead++
	}
	d = d[lead:]
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	if len(d) == 0 {
		out = append(out, '0') // any zero, including -0 and 0e7
		return out, nil
	}
	point := len(intDigits) - lead + exp
	neg := tok[0] == '-'

	if len(d) <= 15 && point > -290 && point < 290 {
		// At most 15 significant digits (DBL_DIG) in the normal range:
		// such a decimal round-trips through float64, so these digits are
		// the float64's shortest form (and an integer is below 10^15 or
		// denoted exactly): no float conversion needed.
		if neg {
			out = append(out, '-')
		}
		return appendES6(out, d, point), nil
	}

	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) {
		return out, c.fail(off, ErrNumber, "number %s is beyond the float64 range", clip(tok))
	}
	var buf [32]byte
	sd, n := shortest(buf[:0], f)

	// Keep the exact digits of an integer above 2^53 unless ES6 already
	// is exact, and of a non-integer above 2^53 (every float64 there is an
	// integer: float64 would merge it with its neighbours).
	safe := cmpSafe(d, point)
	bigInt := point >= len(d) && safe > 0 && !(n == point && string(sd) == string(d))
	if bigInt || point < len(d) && safe >= 0 {
		if neg {
			out = append(out, '-')
		}
		return appendPlain(out, d, point), nil
	}
	if f == 0 { // underflow: RFC 8785 writes the float64 zero
		out = append(out, '0')
		return out, nil
	}
	if f < 0 {
		out = append(out, '-')
	}
	out = appendES6(out, sd, n)
	return out, nil
}

// cmpSafe compares the integer part of 0.d × 10^point (d without leading
// zeros, point > 0) with 2^53: -1, 0 or +1.
func cmpSafe(d []byte, point int) int {
	if point != len(maxSafe) {
		return cmp.Compare(point, len(maxSafe))
	}
	for i := 0; i < point; i++ {
		x := byte('0')
		if i < len(d) {
			x = d[i]
		}
		if x != maxSafe[i] {
			return cmp.Compare(x, maxSafe[i])
		}
	}
	return 0
}

// clip shortens a token for an error message.
func clip(tok []byte) string {
	const maxShown = 40
	if len(tok) > maxShown {
		return string(tok[:maxShown]) + "..."
	}
	return string(tok)
}

// shortest returns the shortest decimal digits that round-trip |f| (f != 0
// gives no leading or trailing zeros) and the decimal point position n, so
// that |f| ≈ 0.digits × 10^n. The digits are appended to buf.
func shortest(buf []byte, f float64) (digits []byte, n int) {
	if f == 0 {
		return append(buf, '0'), 1
	}
	b := strconv.AppendFloat(buf, math.Abs(f), 'e', -1, 64) // d.ddde±XX
	e := len(b) - 1
	for b[e] != 'e' {
		e--
	}
	x := 0
	for _, ch := range b[e+2:] {
		x = x*10 + int(ch-'0')
	}
	if b[e+1] == '-' {
		x = -x
	}
	digits = b[:e]
	if len(digits) > 1 { // drop the '.'
		copy(digits[1:], digits[2:])
		digits = digits[:len(digits)-1]
	}
	return digits, x + 1
}

// appendES6 writes a positive number with significant digits d and point
// position n (value 0.d × 10^n) the way ECMAScript's Number.prototype.toString
// does (ECMA-262, Number::toString), which RFC 8785 adopts.
func appendES6(out, d []byte, n int) []byte {
	switch {
	case 0 < n && n <= 21:
		out = appendPlain(out, d, n)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for i := n; i < 0; i++ {
			out = append(out, '0')
		}
		out = append(out, d...)
	default:
		out = append(out, d[0])
		if len(d) > 1 {
			out = append(out, '.')
			out = append(out, d[1:]...)
		}
		out = append(out, 'e')
		if n > 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10) // a '-' of its own
	}
	return out
}

// appendPlain writes 0.d × 10^n, n > 0, without an exponent.
func appendPlain(out, d []byte, n int) []byte {
	if n >= len(d) {
		out = append(out, d...)
		for i := len(d); i < n; i++ {
			out = append(out, '0')
		}
		return out
	}
	out = append(out, d[:n]...)
	out = append(out, '.')
	return append(out, d[n:]...)
}
