package keyderive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// fuzzOpts lifts the depth limit to gowebpki/jcs's, so that the
// differential target compares like with like.
var fuzzOpts = &Options{MaxDepth: 10000}

// addSeeds seeds a fuzz target with the RFC 8785 vectors, a sample of the
// ES6 number vector, the table tests' inputs and a few tricky documents.
// Kept small: the seed corpus runs in every plain `go test`.
func addSeeds(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join(vectorDir, "input", "*.json"))
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	file, err := os.Open(filepath.Join(vectorDir, "es6-numbers-10k.txt"))
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	var nums []string
	sc := bufio.NewScanner(file)
	for i := 0; sc.Scan(); i++ {
		if i%250 == 0 {
			_, want, _ := strings.Cut(sc.Text(), ",")
			nums = append(nums, want)
		}
	}
	f.Add([]byte("[" + strings.Join(nums, ",") + "]"))
	for _, s := range []string{
		`{}`, `[]`, `null`, `0`, `-0`, `"x"`, ` {"b" : [1 , 2.50], "a":{"d":null,"c":true}} `,
		`{"amount":4900,"currency":"usd","memo":null,"reason":"retry"}`,
		`[9007199254740993, 1e30, 1.0e20, 12345678901234567890, -9007199254740993.0]`,
		`{"\ufb33":1,"😀":2,"\n":3,"\\":4,"\"":5,"\u001f":6}`,
		`"\ud83d\ude00\u0000\u007f\/"`, `[1e-400, 5e-324, 1.7976931348623157e308]`,
		`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `1e400`, `[1,]`, `{"a" 1}`, `01`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzCanonicalize: never panics; accepted input gives valid, canonical
// (idempotent) UTF-8 JSON; rejected input gets a *SyntaxError with an
// offset inside the input; nothing encoding/json rejects is accepted.
func FuzzCanonicalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data, fuzzOpts)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Fatalf("Canonicalize(%q) error %v; want a *SyntaxError with an offset in [0,%d]", data, err, len(data))
			}
			if out != nil {
				t.Fatalf("Canonicalize(%q) = %q with error %v; want nil", data, out, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Canonicalize(%q) = %q; want an error (encoding/json rejects it)", data, out)
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q: not valid UTF-8 JSON", data, out)
		}
		again, err := Canonicalize(out, fuzzOpts)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Canonicalize(Canonicalize(%q)) = %q, %v; want %q", data, again, err, out)
		}
	})
}

// FuzzCanonicalizeStable: respelling a document (whitespace, member order,
// string escapes, number spelling) does not change its canonical form.
func FuzzCanonicalizeStable(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := Canonicalize(data, fuzzOpts)
		if err != nil {
			return
		}
		for seed := uint64(1); seed <= 3; seed++ {
			s := &scrambler{state: seed * uint64(len(data)+7)}
			variant := s.value(nil, want, 0)
			got, err := Canonicalize(variant, fuzzOpts)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Canonicalize(%q) = %q, %v; want %q (respelling of %q)", variant, got, err, want, data)
			}
		}
	})
}

// scrambler respells canonical JSON without changing its meaning.
type scrambler struct{ state uint64 }

func (s *scrambler) next(n int) int {
	s.state = s.state*6364136223846793005 + 1442695040888963407
	return int((s.state >> 33) % uint64(n))
}

func (s *scrambler) space(out []byte) []byte {
	return append(out, []string{"", " ", "\n\t", "\r\n  "}[s.next(4)]...)
}

// value appends a respelling of the canonical value at v[i:] and returns
// the offset past it.
func (s *scrambler) value(out, v []byte, i int) []byte {
	out = s.space(out)
	end := skipValue(v, i)
	switch v[i] {
	case '{':
		var members [][]byte
		for p := i + 1; p < end-1; {
			kEnd := skipString(v, p)
			vEnd := skipValue(v, kEnd+1)
			m := s.str(nil, v[p:kEnd])
			m = s.space(m)
			m = append(m, ':')
			m = s.value(m, v, kEnd+1)
			members = append(members, m)
			p = vEnd + 1
		}
		// Rotate and maybe reverse the member order.
		if n := len(members); n > 1 {
			r := s.next(n)
			members = append(members[r:], members[:r]...)
			if s.next(2) == 0 {
				for a, b := 0, n-1; a < b; a, b = a+1, b-1 {
					members[a], members[b] = members[b], members[a]
				}
			}
		}
		out = append(out, '{')
		for k, m := range members {
			if k > 0 {
				out = s.space(out)
				out = append(out, ',')
			}
			out = append(out, m...)
		}
		out = s.space(out)
		return append(out, '}')
	case '[':
		out = append(out, '[')
		for p, k := i+1, 0; p < end-1; k++ {
			if k > 0 {
				out = append(out, ',')
			}
			out = s.value(out, v, p)
			p = skipValue(v, p) + 1
		}
		out = s.space(out)
		return append(out, ']')
	case '"':
		return s.space(s.str(out, v[i:end]))
	case 't', 'f', 'n':
		return s.space(append(out, v[i:end]...))
	default:
		return s.space(s.number(out, v[i:end]))
	}
}

// str respells a canonical string: some characters as \u escapes
// (surrogate pairs above U+FFFF), '/' as "\/".
func (s *scrambler) str(out, q []byte) []byte {
	out = append(out, '"')
	body := q[1 : len(q)-1]
	for j := 0; j < len(body); {
		r, n := decodeCanonical(body[j:])
		switch {
		case s.next(3) != 0:
			out = append(out, body[j:j+n]...)
		case r == '/':
			out = append(out, `\/`...)
		case r >= 0x10000:
			r -= 0x10000
			out = appendU(appendU(out, 0xD800+(r>>10)), 0xDC00+(r&0x3FF))
		default:
			out = appendU(out, r)
		}
		j += n
	}
	return append(out, '"')
}

func appendU(out []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	return append(out, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}

// number respells a canonical number with the same exact value.
func (s *scrambler) number(out, n []byte) []byte {
	mant, exp, hasExp := strings.Cut(string(n), "e")
	switch s.next(3) {
	case 0:
		return append(out, n...)
	case 1: // trailing zeros in a fraction
		if !strings.Contains(mant, ".") {
			mant += "."
		}
		mant += "00"
	case 2: // shift the point: m × 10^e = (m × 10) × 10^(e-1)
		if mant == "0" || mant == "-0" {
			return append(out, n...)
		}
		x := 0
		if hasExp {
			x = atoi(exp)
		}
		ip, frac, _ := strings.Cut(mant, ".")
		sign, digits := "", ip+frac+"0"
		if digits[0] == '-' {
			sign, digits = "-", digits[1:]
		}
		mant, exp, hasExp = sign+strings.TrimLeft(digits, "0"), itoa(x-len(frac)-1), true
	}
	out = append(out, mant...)
	if hasExp {
		out = append(out, 'E')
		out = append(out, exp...)
	}
	return out
}

func atoi(s string) int {
	v, _ := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	return int(v.Int64())
}

func itoa(x int) string { return big.NewInt(int64(x)).String() }

// FuzzDifferential compares Canonicalize with gowebpki/jcs, an independent
// RFC 8785 implementation. Skipped, because the two are meant to differ:
//   - input holding a number beyond ±2^53 (this package keeps it exact);
//   - input either side rejects for nesting depth (both limits are 10000
//     here, but jcs counts from another base).
//
// Apart from those, both must accept and reject the same input, and agree
// byte for byte on what they accept.
func FuzzDifferential(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, err := Canonicalize(data, fuzzOpts)
		theirs, jerr := jcs.Transform(data)
		if errors.Is(err, ErrTooDeep) || (jerr != nil && strings.Contains(jerr.Error(), "nesting depth")) {
			t.Skip("nesting depth limit")
		}
		if hasBigNumber(data) {
			t.Skip("number beyond 2^53")
		}
		switch {
		case err != nil && jerr != nil:
		case err != nil:
			t.Fatalf("Canonicalize(%q) error %v; jcs accepts it as %q", data, err, theirs)
		case jerr != nil:
			t.Fatalf("Canonicalize(%q) = %q; jcs rejects it: %v", data, ours, jerr)
		case !bytes.Equal(ours, theirs):
			t.Fatalf("Canonicalize(%q) = %q; jcs gives %q", data, ours, theirs)
		}
	})
}

// hasBigNumber reports whether valid JSON data holds a number of magnitude
// above 2^53, by exact rational arithmetic. Every other number is inside
// the range where float64 holds each integer, and there the output must be
// RFC 8785's byte for byte.
func hasBigNumber(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	limit := new(big.Rat).SetInt64(1 << 53)
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		r, ok := new(big.Rat).SetString(string(n))
		if ok && new(big.Rat).Abs(r).Cmp(limit) > 0 {
			return true
		}
	}
}

// FuzzNormalize: normalization never panics, returns canonical JSON, and
// is idempotent.
func FuzzNormalize(f *testing.F) {
	addSeeds(f)
	n, err := NewNormalizer([]byte(paymentSchema), []string{"reason", "shipping.note", "a"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		once, err := n.Normalize(data)
		if err != nil {
			return
		}
		c, err := Canonicalize(once, fuzzOpts)
		if err != nil || !bytes.Equal(c, once) {
			t.Fatalf("Normalize(%q) = %q, not canonical (%q, %v)", data, once, c, err)
		}
		twice, err := n.Normalize(once)
		if err != nil || !bytes.Equal(twice, once) {
			t.Fatalf("Normalize(Normalize(%q)) = %q, %v; want %q", data, twice, err, once)
		}
	})
}
