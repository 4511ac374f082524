package keyderive

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

const vectorDir = "../testdata/jcs"

// TestVectors checks the RFC 8785 reference input/output pairs.
func TestVectors(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(vectorDir, "input", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 6 {
		t.Fatalf("found %d input vectors in %s; want 6", len(inputs), vectorDir)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(vectorDir, "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(input, nil)
			if err != nil {
				t.Fatalf("Canonicalize(%s) error: %v", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Canonicalize(%s) = %s; want %s", name, got, want)
			}
			again, err := Canonicalize(got, nil)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("Canonicalize(Canonicalize(%s)) = %s, %v; want %s", name, again, err, got)
			}
		})
	}
}

// TestES6Numbers checks all 10,000 lines of the reference ES6 number
// vector: each float64 bit pattern, written by Go as a JSON number,
// canonicalizes to the expected text.
func TestES6Numbers(t *testing.T) {
	f, err := os.Open(filepath.Join(vectorDir, "es6-numbers-10k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, failures := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		hexBits, want, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			t.Fatalf("line %d: %q has no comma", lines, sc.Text())
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("line %d: %s is not a finite number", lines, hexBits)
		}
		// Several spellings of the same float64: the shortest, the
		// expected text itself, and 17 significant digits. The last only
		// below 2^53: above it every float64 is an integer, and 17 digits
		// spell a different integer than the shortest form, which this
		// package keeps exact (the documented departure from RFC 8785).
		spellings := []string{strconv.FormatFloat(v, 'g', -1, 64), want}
		if math.Abs(v) < 1<<53 {
			spellings = append(spellings, strconv.FormatFloat(v, 'e', 16, 64))
		}
		for _, in := range spellings {
			got, err := Canonicalize([]byte(in), nil)
			if err != nil || string(got) != want {
				failures++
				if failures <= 10 {
					t.Errorf("line %d: Canonicalize(%s) = %s, %v; want %s", lines, in, got, err, want)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != 10000 {
		t.Errorf("read %d lines; want 10000", lines)
	}
	if failures > 0 {
		t.Errorf("%d of %d numbers failed", failures, lines)
	}
}

// TestShortDecimals checks the fast path for numbers of at most 15
// significant digits, which skips the float64 conversion, against
// gowebpki/jcs's formatting of strconv.ParseFloat's result, over random
// digits, exponents and spellings.
func TestShortDecimals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	failures := 0
	for range 100000 {
		digits := make([]byte, 1+rng.IntN(15))
		for i := range digits {
			digits[i] = byte('0' + rng.IntN(10))
		}
		if digits[0] == '0' {
			digits[0] = '1'
		}
		var tok string
		switch rng.IntN(3) {
		case 0: // d.ddde±x
			tok = string(digits[:1]) + "." + string(digits[1:]) + "e" + strconv.Itoa(rng.IntN(640)-320)
			if len(digits) == 1 {
				tok = string(digits) + "e" + strconv.Itoa(rng.IntN(640)-320)
			}
		case 1: // 0.000ddd
			tok = "0." + strings.Repeat("0", rng.IntN(25)) + string(digits)
		default: // ddd.ddd
			p := rng.IntN(len(digits) + 1)
			tok = string(digits[:p]) + "." + string(digits[p:])
			if p == 0 {
				tok = "0" + tok
			}
			if p == len(digits) {
				tok += "0"
			}
		}
		if rng.IntN(2) == 0 {
			tok = "-" + tok
		}
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			continue // out of range
		}
		want, err := jcs.NumberToJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Canonicalize([]byte(tok), nil)
		if err != nil || string(got) != want {
			if failures++; failures <= 10 {
				t.Errorf("Canonicalize(%s) = %s, %v; want %s", tok, got, err, want)
			}
		}
	}
}
