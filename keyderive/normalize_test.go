package keyderive

import (
	"errors"
	"testing"
)

const paymentSchema = `{
  "type": "object",
  "properties": {
    "amount":   {"type": "integer", "description": "minor units"},
    "currency": {"type": "string"},
    "memo":     {"type": ["string", "null"]},
    "reason":   {"type": "string", "description": "why, in the model's words"},
    "capture":  {"type": "boolean", "default": true},
    "customer": {"type": "string", "default": null},
    "shipping": {
      "type": "object",
      "properties": {
        "method": {"type": "string", "default": "standard"},
        "note":   {"type": "string"},
        "gift":   {"type": "boolean"}
      },
      "required": ["gift"]
    },
    "tags": {"type": "array", "items": {"type": "string"}, "default": [ "a" , 1.0 ]}
  },
  "required": ["amount", "currency"]
}`

func TestNormalize(t *testing.T) {
	n, err := NewNormalizer([]byte(paymentSchema), []string{"reason", "shipping.note"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		// The example: same key with and without the noise.
		{`{"amount":4900,"currency":"usd"}`,
			`{"amount":4900,"capture":true,"currency":"usd","tags":["a",1]}`},
		{`{"currency":"usd","amount":4900.0,"memo":null,"reason":"retrying"}`,
			`{"amount":4900,"capture":true,"currency":"usd","tags":["a",1]}`},
		// A given value beats the default; null optional takes the default.
		{`{"amount":1,"capture":false,"currency":"eur","tags":null}`,
			`{"amount":1,"capture":false,"currency":"eur","tags":["a",1]}`},
		// Required properties keep null; undeclared ones are untouched.
		{`{"amount":null,"currency":"usd","extra":null,"capture":true,"tags":[]}`,
			`{"amount":null,"capture":true,"currency":"usd","extra":null,"tags":[]}`},
		// Nested: default filled, volatile dropped, required null kept.
		{`{"amount":1,"currency":"usd","shipping":{"note":"leave at door","gift":null},"tags":[]}`,
			`{"amount":1,"capture":true,"currency":"usd","shipping":{"gift":null,"method":"standard"},"tags":[]}`},
		{`{"amount":1,"currency":"usd","shipping":{},"tags":[]}`,
			`{"amount":1,"capture":true,"currency":"usd","shipping":{"method":"standard"},"tags":[]}`},
		// A nested property that is not an object is left alone.
		{`{"amount":1,"currency":"usd","shipping":"express","tags":[]}`,
			`{"amount":1,"capture":true,"currency":"usd","shipping":"express","tags":[]}`},
		// Not an object at the top: unchanged.
		{`[1,{"reason":"x"}]`, `[1,{"reason":"x"}]`},
		// Not canonical on the way in: canonicalized first.
		{` { "reason" : "x" , "currency":"usd", "amount": 2e0 } `,
			`{"amount":2,"capture":true,"currency":"usd","tags":["a",1]}`},
	}
	for _, tt := range tests {
		got, err := n.Normalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Normalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			continue
		}
		again, err := Canonicalize(got, nil)
		if err != nil || string(again) != string(got) {
			t.Errorf("Normalize(%s) = %s is not canonical (canonical: %s, %v)", tt.in, got, again, err)
		}
	}
	if _, err := n.Normalize([]byte(`{"amount":`)); !errors.Is(err, ErrSyntax) {
		t.Errorf("Normalize(invalid) error = %v; want ErrSyntax", err)
	}
}

func TestNormalizeVolatileOnly(t *testing.T) {
	n, err := NewNormalizer(nil, []string{"reason", "meta.trace", "a\u00e9"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{`{"amount":1,"reason":"x","memo":null}`, `{"amount":1,"memo":null}`},
		{`{"meta":{"trace":"t1","user":"u"},"reason":null}`, `{"meta":{"user":"u"}}`},
		{`{"meta":"t1","a\u00e9":1,"b":2}`, `{"b":2,"meta":"t1"}`},
		{`{"\u0000":1,"reason":2,"\u00ff":3}`, `{"\u0000":1,"ÿ":3}`},
	}
	for _, tt := range tests {
		got, err := n.Normalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Normalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestNormalizeDefaultsOrder fills defaults whose names sort around,
// between and after the given members, including names that need escaping
// and that sort differently in UTF-16 than in UTF-8.
func TestNormalizeDefaultsOrder(t *testing.T) {
	schema := `{"properties":{
		"a":{"default":1}, "c":{"default":3}, "e":{"default":5},
		"\n":{"default":0}, "\ufb33":{"default":"bmp"}, "😀":{"default":"astral"}}}`
	n, err := NewNormalizer([]byte(schema), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{`{}`, "{\"\\n\":0,\"a\":1,\"c\":3,\"e\":5,\"\U0001F600\":\"astral\",\"\uFB33\":\"bmp\"}"},
		{`{"b":2,"d":4,"c":30,"\ufb33":"x"}`, "{\"\\n\":0,\"a\":1,\"b\":2,\"c\":30,\"d\":4,\"e\":5,\"\U0001F600\":\"astral\",\"\uFB33\":\"x\"}"},
	}
	for _, tt := range tests {
		got, err := n.Normalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Normalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestNormalizeObjectDefault: an object default is itself normalized by
// its property's rules, so that normalizing twice changes nothing.
func TestNormalizeObjectDefault(t *testing.T) {
	schema := `{"properties":{"ship":{
		"default":{"note":"x","method":null,"speed":1.50},
		"properties":{"note":{},"method":{"default":"std"},"speed":{}}}}}`
	n, err := NewNormalizer([]byte(schema), []string{"ship.note"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ship":{"method":"std","speed":1.5}}`
	once, err := n.Normalize([]byte(`{}`))
	if err != nil || string(once) != want {
		t.Fatalf("Normalize({}) = %s, %v; want %s", once, err, want)
	}
	twice, err := n.Normalize(once)
	if err != nil || string(twice) != want {
		t.Errorf("Normalize(%s) = %s, %v; want %s", once, twice, err, want)
	}
}

func TestNewNormalizerErrors(t *testing.T) {
	tests := []struct {
		schema   string
		volatile []string
	}{
		{`{"type":"object",`, nil},
		{`{"type":"array"}`, nil},
		{`{"type":["string","null"]}`, nil},
		{`[]`, nil},
		{`{"properties":[]}`, nil},
		{`{"properties":{"a":{"properties":1}}}`, nil},
		{`{"properties":{"a":1}}`, nil},
		{`{"properties":{},"required":"a"}`, nil},
		{`{"properties":{"a":{"default":1e999}}}`, nil},
		{`{"properties":{"a":{}},"properties":{}}`, nil},
		{`{}`, []string{""}},
		{`{}`, []string{"a..b"}},
		{`{}`, []string{"a."}},
	}
	for _, tt := range tests {
		n, err := NewNormalizer([]byte(tt.schema), tt.volatile)
		if !errors.Is(err, ErrSchema) {
			t.Errorf("NewNormalizer(%s, %q) = %v, %v; want ErrSchema", tt.schema, tt.volatile, n, err)
		}
	}
	// The schema as a whole may say nothing we use.
	for _, schema := range []string{`{}`, `true`, `{"type":"object"}`, `{"type":["object","null"],"$ref":"#/x"}`} {
		if _, err := NewNormalizer([]byte(schema), nil); err != nil {
			t.Errorf("NewNormalizer(%s) error: %v; want none", schema, err)
		}
	}
}

func TestDeriveWithNormalizer(t *testing.T) {
	n, err := NewNormalizer([]byte(paymentSchema), []string{"reason"})
	if err != nil {
		t.Fatal(err)
	}
	d := &Deriver{Namespace: testNS, Normalizer: n}
	in := Intent{Tenant: "acme", Session: "s", Turn: "1", Tool: "charge"}
	a, err := d.Derive(in, []byte(`{"amount":4900,"currency":"usd"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Derive(in, []byte(`{"currency":"usd","amount":4900.0,"memo":null,"reason":"retrying"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key || a.Fingerprint != b.Fingerprint {
		t.Errorf("Derive keys %v and %v differ; want equal (canonical %s and %s)", a.Key, b.Key, a.Canonical, b.Canonical)
	}
	c, _ := d.Derive(in, []byte(`{"amount":4900,"currency":"usd","capture":false}`))
	if c.Key == a.Key {
		t.Errorf("Derive with capture:false = key of capture default true; want different")
	}
	plain := &Deriver{Namespace: testNS}
	p, _ := plain.Derive(in, []byte(`{"amount":4900,"currency":"usd"}`))
	q, _ := plain.Derive(in, []byte(`{"amount":4900,"currency":"usd","reason":"retrying"}`))
	if p.Key == q.Key {
		t.Errorf("without a Normalizer, a volatile field changed nothing; want a different key")
	}
}
