package keyderive

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, want string }{
		// Whitespace and member order.
		{` { "b" : 1 , "a" : [ 1 , 2 ] } `, `{"a":[1,2],"b":1}`},
		{"\t\r\n[]\n", `[]`},
		{`{}`, `{}`},
		{`"x"`, `"x"`},
		{` true `, `true`},
		{`null`, `null`},
		{`{"a":{"d":1,"c":2},"b":[{"z":0,"y":0}]}`, `{"a":{"c":2,"d":1},"b":[{"y":0,"z":0}]}`},
		// Keys compare by UTF-16 code units: U+1F600 (surrogates D83D..)
		// sorts before U+FB33 although its code point is larger; escapes
		// compare as the characters they stand for.
		{`{"\ufb33":1,"😀":2,"a":3}`, "{\"a\":3,\"\U0001F600\":2,\"\uFB33\":1}"},
		{`{"b":1,"\n":2,"\"":3,"\\":4,"\u001f":5}`, `{"\n":2,"\u001f":5,"\"":3,"\\":4,"b":1}`},
		{`{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		// Names sharing their first 8 bytes, and names that are prefixes
		// of others, around the 8-byte prefix fast path.
		{`{"abcdefghj":1,"abcdefghi":2,"abcdefgh":3,"abcdefg":4,"abcdefgh\u00e9":5,"abcdefg\u00e9":6}`,
			`{"abcdefg":4,"abcdefgh":3,"abcdefghi":2,"abcdefghj":1,"abcdefghé":5,"abcdefgé":6}`},
		{`{"a\nb":1,"a":2,"a b":3,"a\u0000":4}`, `{"a":2,"a\u0000":4,"a\nb":1,"a b":3}`},
		// Minimal escaping.
		{`"\u0041\/\u00e9\u20ac\ud83d\ude00"`, `"A/é€😀"`},
		{`"\u0000\u0008\u0009\u000a\u000c\u000d\u001F\u007f"`, `"\u0000\b\t\n\f\r\u001f` + "\x7f" + `"`},
		{`"\u2028 <>&"`, "\"\u2028 <>&\""},
		// Numbers (RFC 8785 and ES6).
		{`-0`, `0`},
		{`-0.0e+5`, `0`},
		{`4900.0`, `4900`},
		{`1E3`, `1000`},
		{`0.1e1`, `1`},
		{`1e21`, `1e+21`},
		{`1e20`, `100000000000000000000`},
		{`1.0e20`, `100000000000000000000`},
		{`0.000001`, `0.000001`},
		{`0.0000001`, `1e-7`},
		{`123456789012345`, `123456789012345`},
		{`-123456789012345`, `-123456789012345`},
		{`1e-400`, `0`},
		{`-1e-400`, `0`},
		{`5e-324`, `5e-324`},
		{`1.7976931348623157e308`, `1.7976931348623157e+308`},
		{`333333333.33333329`, `333333333.3333333`},
		{`9007199254740992`, `9007199254740992`},
		{`-9007199254740992`, `-9007199254740992`},
		// The departure: integers beyond 2^53 keep their exact digits
		// unless the ES6 form denotes the very same integer.
		{`9007199254740993`, `9007199254740993`},
		{`-9007199254740993`, `-9007199254740993`},
		{`9007199254740993.0`, `9007199254740993`},
		{`90071992547409930e-1`, `9007199254740993`},
		{`9007199254740994`, `9007199254740994`},
		{`12345678901234567890`, `12345678901234567890`},
		{`1e30`, `1e+30`},
		{`1000000000000000000000000000000`, `1e+30`},
		{`1000000000000000000000000000001`, `1000000000000000000000000000001`},
		{`1.5e300`, `1.5e+300`},
		{`9007199254740993.5`, `9007199254740993.5`}, // a non-integer beyond 2^53: exact too
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in), nil)
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestBigIntegersDistinct is the reason for the departure: two different
// order ids beyond 2^53 must never canonicalize alike (RFC 8785 would map
// both to 9007199254740992).
func TestBigIntegersDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, in := range []string{
		"9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995",
		"18014398509481985", "18014398509481986", "18014398509481984",
		"100000000000000000000001", "1e23", "99999999999999991611392",
	} {
		got, err := Canonicalize([]byte(`{"order":`+in+`}`), nil)
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", in, err)
		}
		if prev, ok := seen[string(got)]; ok {
			t.Errorf("Canonicalize(%s) = Canonicalize(%s) = %s; want different", in, prev, got)
		}
		seen[string(got)] = in
	}
}

// TestBigNonIntegersDistinct: non-integers above 2^53 keep their exact
// value too. Through float64, 12345678901234567890.5 and
// 12345678901234567890.25 are one number, so two intents got one key.
func TestBigNonIntegersDistinct(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12345678901234567890.5", "12345678901234567890.5"},
		{"12345678901234567890.25", "12345678901234567890.25"},
		{"-12345678901234567890.25", "-12345678901234567890.25"},
		{"1234567890123456789.025e1", "12345678901234567890.25"},
		{"12345678901234567890250e-3", "12345678901234567890.25"},
		{"9007199254740992.5", "9007199254740992.5"},
		{"9007199254740993.5000", "9007199254740993.5"},
		{"9007199254740992", "9007199254740992"},
		{"9007199254740991.5", "9007199254740992"}, // below 2^53: RFC 8785, float64
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in), nil)
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	d := &Deriver{Namespace: testNS}
	in := Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "pay"}
	a, errA := d.Derive(in, []byte(`{"amount":12345678901234567890.5}`))
	b, errB := d.Derive(in, []byte(`{"amount":12345678901234567890.25}`))
	if errA != nil || errB != nil {
		t.Fatalf("Derive: %v, %v", errA, errB)
	}
	if a.Key == b.Key || a.Fingerprint == b.Fingerprint {
		t.Errorf("12345678901234567890.5 and 12345678901234567890.25 derive one key %s; want two", a.Key)
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	tests := []struct {
		in     string
		err    error
		offset int64
		msg    string // a fragment of the message
	}{
		{``, ErrSyntax, 0, "end of input"},
		{`   `, ErrSyntax, 3, "end of input"},
		{`{"a":1,}`, ErrSyntax, 7, "member name"},
		{`[1,]`, ErrSyntax, 3, "looking for a JSON value"},
		{`[1 2]`, ErrSyntax, 3, "looking for ',' or ']'"},
		{`{"a" 1}`, ErrSyntax, 5, "':'"},
		{`{"a":1`, ErrSyntax, 6, "end of input in object"},
		{`{1:2}`, ErrSyntax, 1, "member name"},
		{`01`, ErrSyntax, 1, "after the top-level value"},
		{`1.`, ErrSyntax, 2, "after '.'"},
		{`1e`, ErrSyntax, 2, "exponent"},
		{`-`, ErrSyntax, 1, "looking for a digit"},
		{`+1`, ErrSyntax, 0, "'+'"},
		{`.5`, ErrSyntax, 0, "'.'"},
		{`NaN`, ErrSyntax, 0, "'N'"},
		{`Infinity`, ErrSyntax, 0, "'I'"},
		{`tru`, ErrSyntax, 3, "literal true"},
		{`nul1`, ErrSyntax, 3, "literal null"},
		{`"abc`, ErrSyntax, 4, "end of input in string"},
		{"\"a\nb\"", ErrSyntax, 2, "control character"},
		{`"\x"`, ErrSyntax, 2, "invalid escape"},
		{`"\u12G4"`, ErrSyntax, 5, "hex digit"},
		{`{} {}`, ErrSyntax, 3, "after the top-level value"},
		{"\xef\xbb\xbf{}", ErrSyntax, 0, "byte 0xef"},
		{`{"a":1,"b":2,"a":3}`, ErrDuplicateKey, 13, `"a"`},
		{`{"b":1,"a":2,"b":3}`, ErrDuplicateKey, 13, `"b"`},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey, 7, `"a"`},
		{`[{"x":{"y":1,"y":2}}]`, ErrDuplicateKey, 13, `"y"`},
		{"\"\xff\"", ErrInvalidUTF8, 1, "0xff"},
		{"\"\xc3\"", ErrInvalidUTF8, 1, "0xc3"},
		{"\"\xed\xa0\x80\"", ErrInvalidUTF8, 1, "0xed"}, // a surrogate in UTF-8
		{"\"\xc0\xaf\"", ErrInvalidUTF8, 1, "0xc0"},     // overlong
		{`"\ud800"`, ErrInvalidUTF8, 1, "unpaired"},
		{`"\udc00\ud800"`, ErrInvalidUTF8, 1, "unpaired"},
		{`"\ud800\u0041"`, ErrInvalidUTF8, 1, "unpaired"},
		{`1e400`, ErrNumber, 0, "float64 range"},
		{`[-1e309]`, ErrNumber, 1, "float64 range"},
		{`1` + strings.Repeat("0", 400), ErrNumber, 0, "float64 range"},
		{deep, ErrTooDeep, 64, "maximum depth of 64"},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in), nil)
		var se *SyntaxError
		if !errors.Is(err, tt.err) || !errors.As(err, &se) {
			t.Errorf("Canonicalize(%q) = %q, %v; want a *SyntaxError wrapping %v", tt.in, got, err, tt.err)
			continue
		}
		if se.Offset != tt.offset || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Canonicalize(%q) error = %q (offset %d); want offset %d and %q in the message", tt.in, err, se.Offset, tt.offset, tt.msg)
		}
		if got != nil {
			t.Errorf("Canonicalize(%q) returned %q with its error; want nil", tt.in, got)
		}
	}
}

func TestLimits(t *testing.T) {
	depth := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":[`, n) + strings.Repeat(`]}`, n))
	}
	tests := []struct {
		name  string
		in    []byte
		opts  *Options
		want  error
		wantN int64 // offset, if an error
	}{
		{"64 levels, default", []byte(strings.Repeat("[", 64) + strings.Repeat("]", 64)), nil, nil, 0},
		{"64 levels of objects and arrays", depth(32), nil, nil, 0},
		{"66 levels", depth(33), nil, ErrTooDeep, 192},
		{"66 levels, MaxDepth 100", depth(33), &Options{MaxDepth: 100}, nil, 0},
		{"3 levels, MaxDepth 2", []byte(`[[[]]]`), &Options{MaxDepth: 2}, ErrTooDeep, 2},
		{"1 MiB", bytes.Repeat([]byte(" "), 1<<20-1), nil, ErrSyntax, 1<<20 - 1},
		{"1 MiB + 1", bytes.Repeat([]byte(" "), 1<<20+1), nil, ErrTooLarge, 1 << 20},
		{"MaxBytes 10", []byte(`"0123456789"`), &Options{MaxBytes: 10}, ErrTooLarge, 10},
		{"MaxBytes 12", []byte(`"0123456789"`), &Options{MaxBytes: 12}, nil, 0},
	}
	for _, tt := range tests {
		_, err := Canonicalize(tt.in, tt.opts)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Canonicalize error = %v; want %v", tt.name, err, tt.want)
			continue
		}
		var se *SyntaxError
		if tt.want != nil && (!errors.As(err, &se) || se.Offset != tt.wantN) {
			t.Errorf("%s: Canonicalize error = %v; want offset %d", tt.name, err, tt.wantN)
		}
	}
}

func TestAppendCanonical(t *testing.T) {
	dst := []byte("prefix:")
	got, err := AppendCanonical(dst, []byte(`{"b":2,"a":1}`), nil)
	if err != nil || string(got) != `prefix:{"a":1,"b":2}` {
		t.Errorf("AppendCanonical = %q, %v; want %q", got, err, `prefix:{"a":1,"b":2}`)
	}
	got, err = AppendCanonical(dst, []byte(`{"b":2,"a":1,}`), nil)
	if err == nil || string(got) != "prefix:" {
		t.Errorf("AppendCanonical(invalid) = %q, %v; want %q and an error", got, err, "prefix:")
	}
}

// TestSortLarge sorts an object with many members in reverse order, with
// nested objects that are themselves unsorted, and checks the result
// against an independent sort.
func TestSortLarge(t *testing.T) {
	var in, want strings.Builder
	const n = 500
	in.WriteString("{")
	for i := n - 1; i >= 0; i-- {
		if i < n-1 {
			in.WriteString(", ")
		}
		in.WriteString(`"k` + pad(i) + `": {"z":` + num(i) + `,"y":[` + num(i) + `]}`)
	}
	in.WriteString("}")
	want.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			want.WriteString(",")
		}
		want.WriteString(`"k` + pad(i) + `":{"y":[` + num(i) + `],"z":` + num(i) + `}`)
	}
	want.WriteString("}")
	got, err := Canonicalize([]byte(in.String()), nil)
	if err != nil || string(got) != want.String() {
		t.Errorf("Canonicalize(reversed object) = %.200s..., %v; want %.200s...", got, err, want.String())
	}
}

func pad(i int) string {
	s := "000" + num(i)
	return s[len(s)-3:]
}

func num(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}
