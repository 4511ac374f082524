package keyderive

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
)

// smallInput is a ~200-byte payment tool call as a model writes it:
// members out of order, a float-spelled amount, a null.
var smallInput = []byte(`{"currency":"usd","amount":4900.0,"customer":"cus_8812","description":"Order A-1042, 2 items","memo":null,"metadata":{"order_id":"A-1042","channel":"chat"},"capture":true,"reason":"user asked"}`)

// largeInput is a ~50 KB input: a list of line items with strings,
// non-ASCII text, integers, decimals and nested objects, members unsorted.
var largeInput = func() []byte {
	var b strings.Builder
	b.WriteString(`{"order_id":"A-1042","items":[`)
	for i := 0; b.Len() < 50<<10-300; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%05d","title":"Café crème n°%d — ½ kg","qty":%d,"unit_price":%d.%02d,"tax":{"rate":0.2,"amount":%d.5},"tags":["food","fr"],"gift":%t}`,
			i, i, i%7+1, 10+i%90, i%100, i%50, i%3 == 0)
	}
	b.WriteString(`],"total":123456.78,"customer":{"name":"Zoë","id":8812}}`)
	return []byte(b.String())
}()

var benchIntent = Intent{Tenant: "acme", Session: "sess-5c1f", Turn: "3", Tool: "create_charge"}

// baselineKey is the naive derivation: gowebpki/jcs, then uuid.NewSHA1 over
// a name built in memory. (It computes no fingerprint; Derive does.)
func baselineKey(ns uuid.UUID, in Intent, input []byte) (uuid.UUID, []byte, error) {
	canonical, err := jcs.Transform(input)
	if err != nil {
		return uuid.Nil, nil, err
	}
	var name []byte
	for _, f := range []string{intentTag, in.Tenant, in.Session, in.Turn, in.Tool, in.Discriminator} {
		name = binary.BigEndian.AppendUint64(name, uint64(len(f)))
		name = append(name, f...)
	}
	name = binary.BigEndian.AppendUint64(name, uint64(len(canonical)))
	name = append(name, canonical...)
	return uuid.NewSHA1(ns, name), canonical, nil
}

func TestBaselineAgrees(t *testing.T) {
	d := &Deriver{Namespace: testNS}
	for name, in := range map[string][]byte{"small": smallInput, "large": largeInput} {
		got, err := d.Derive(benchIntent, in)
		if err != nil {
			t.Fatal(err)
		}
		key, canonical, err := baselineKey(testNS, benchIntent, in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != key || string(got.Canonical) != string(canonical) {
			t.Errorf("%s: Derive = %v %.80s; baseline = %v %.80s", name, got.Key, got.Canonical, key, canonical)
		}
	}
}

// BenchmarkDerive compares Deriver.Derive (canonicalize, key and SHA-256
// fingerprint) with the baseline (gowebpki/jcs + uuid.NewSHA1, no
// fingerprint) on the same inputs.
func BenchmarkDerive(b *testing.B) {
	for _, tc := range []struct {
		name  string
		input []byte
	}{{"small", smallInput}, {"large", largeInput}} {
		b.Run(tc.name+"/agentonce", func(b *testing.B) {
			d := &Deriver{Namespace: testNS}
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.input)))
			for b.Loop() {
				if _, err := d.Derive(benchIntent, tc.input); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.input)))
			for b.Loop() {
				if _, _, err := baselineKey(testNS, benchIntent, tc.input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCanonicalize compares canonicalization alone.
func BenchmarkCanonicalize(b *testing.B) {
	for _, tc := range []struct {
		name  string
		input []byte
	}{{"small", smallInput}, {"large", largeInput}} {
		b.Run(tc.name+"/agentonce", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.input)))
			for b.Loop() {
				if _, err := Canonicalize(tc.input, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.input)))
			for b.Loop() {
				if _, err := jcs.Transform(tc.input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
