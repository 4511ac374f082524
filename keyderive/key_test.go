package keyderive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

var testNS = uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8")

// lengthPrefixed builds a UUIDv5 name the slow, obvious way.
func lengthPrefixed(fields ...string) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		binary.Write(&b, binary.BigEndian, uint64(len(f)))
		b.WriteString(f)
	}
	return b.Bytes()
}

func TestKeyMatchesUUIDv5(t *testing.T) {
	long := strings.Repeat("t", 1000) // longer than the hasher's buffer
	for _, in := range []Intent{
		{},
		{Tenant: "acme", Session: "s1", Turn: "3", Tool: "charge", Discriminator: ""},
		{Tenant: long, Session: long, Turn: long, Tool: long, Discriminator: long},
	} {
		for _, canonical := range []string{``, `{"amount":4900}`, strings.Repeat("x", 5000)} {
			got := Key(testNS, in, []byte(canonical))
			want := uuid.NewSHA1(testNS, lengthPrefixed(intentTag, in.Tenant, in.Session, in.Turn, in.Tool, in.Discriminator, canonical))
			if got != want {
				t.Errorf("Key(%+.20v, %.20q) = %v; want %v", in, canonical, got, want)
			}
			if got.Version() != 5 || got.Variant() != uuid.RFC4122 {
				t.Errorf("Key = %v: version %d variant %v; want 5, RFC4122", got, got.Version(), got.Variant())
			}
		}
	}
	got := ExplicitKey(testNS, "acme", "order-42/charge")
	want := uuid.NewSHA1(testNS, lengthPrefixed(stepTag, "acme", "order-42/charge"))
	if got != want {
		t.Errorf("ExplicitKey = %v; want %v", got, want)
	}
}

// TestKeyFieldsSeparate shifts bytes across field boundaries: with length
// prefixes, every variant is a different key.
func TestKeyFieldsSeparate(t *testing.T) {
	c := []byte(`{"a":1}`)
	intents := []Intent{
		{Tenant: "ab", Session: "c", Turn: "1", Tool: "t"},
		{Tenant: "a", Session: "bc", Turn: "1", Tool: "t"},
		{Tenant: "abc", Session: "", Turn: "1", Tool: "t"},
		{Tenant: "ab", Session: "c1", Turn: "", Tool: "t"},
		{Tenant: "ab", Session: "c", Turn: "1t", Tool: ""},
		{Tenant: "ab", Session: "c", Turn: "1", Tool: "t", Discriminator: "x"},
		{Tenant: "ab", Session: "c", Turn: "1", Tool: "", Discriminator: "t"},
		{Tenant: "", Session: "abc", Turn: "1", Tool: "t"},
	}
	seen := map[uuid.UUID]Intent{}
	for _, in := range intents {
		k := Key(testNS, in, c)
		if prev, ok := seen[k]; ok {
			t.Errorf("Key(%+v) = Key(%+v) = %v; want different", in, prev, k)
		}
		seen[k] = in
	}
	// Another namespace, another key; the explicit form never meets the
	// intent form.
	in := intents[0]
	if Key(testNS, in, c) == Key(uuid.New(), in, c) {
		t.Errorf("Key under two namespaces is equal; want different")
	}
	if ExplicitKey(testNS, "a", "b") == ExplicitKey(testNS, "b", "b") {
		t.Errorf("ExplicitKey(a, b) = ExplicitKey(b, b); want different (tenant scope)")
	}
	if ExplicitKey(testNS, "ab", "") == ExplicitKey(testNS, "a", "b") {
		t.Errorf("ExplicitKey(ab, \"\") = ExplicitKey(a, b); want different")
	}
}

func TestDerive(t *testing.T) {
	d := &Deriver{Namespace: testNS}
	in := Intent{Tenant: "acme", Session: "s1", Turn: "3", Tool: "charge"}
	a, err := d.Derive(in, []byte(`{"currency":"usd","amount":4900.0}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Derive(in, []byte(` { "amount" : 4900, "currency" : "usd" } `))
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key || a.Fingerprint != b.Fingerprint || !bytes.Equal(a.Canonical, b.Canonical) {
		t.Errorf("Derive of two spellings = %+v and %+v; want equal", a, b)
	}
	if string(a.Canonical) != `{"amount":4900,"currency":"usd"}` {
		t.Errorf("Derive.Canonical = %s; want %s", a.Canonical, `{"amount":4900,"currency":"usd"}`)
	}
	if a.Key != Key(testNS, in, a.Canonical) || a.Fingerprint != FingerprintOf(a.Canonical) {
		t.Errorf("Derive = %+v; want Key and FingerprintOf of its canonical input", a)
	}
	c, _ := d.Derive(in, []byte(`{"amount":4901,"currency":"usd"}`))
	if c.Key == a.Key || c.Fingerprint == a.Fingerprint {
		t.Errorf("Derive of a different amount gave the same key or fingerprint")
	}

	e, err := d.DeriveExplicit(in, "step-7", []byte(`{"amount":4900,"currency":"usd"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Key != ExplicitKey(testNS, "acme", "step-7") || e.Fingerprint != a.Fingerprint {
		t.Errorf("DeriveExplicit = %+v; want ExplicitKey and the same fingerprint as Derive", e)
	}

	if _, err := d.Derive(in, []byte(`{"amount":`)); !errors.Is(err, ErrSyntax) {
		t.Errorf("Derive(invalid) error = %v; want ErrSyntax", err)
	}
	if _, err := d.Derive(in, bytes.Repeat([]byte("1"), 400)); !errors.Is(err, ErrNumber) {
		t.Errorf("Derive(400 digits) error = %v; want ErrNumber", err)
	}
	small := &Deriver{Namespace: testNS, Options: &Options{MaxBytes: 8}}
	if _, err := small.Derive(in, []byte(`{"amount":4900}`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Derive(MaxBytes 8) error = %v; want ErrTooLarge", err)
	}
	var zero Deriver
	if _, err := zero.Derive(in, []byte(`{}`)); !errors.Is(err, ErrNilNamespace) {
		t.Errorf("Deriver{}.Derive error = %v; want ErrNilNamespace", err)
	}
	if _, err := zero.DeriveExplicit(in, "k", []byte(`{}`)); !errors.Is(err, ErrNilNamespace) {
		t.Errorf("Deriver{}.DeriveExplicit error = %v; want ErrNilNamespace", err)
	}
}

// TestDeriveConcurrent hammers one Deriver (and the pools behind it) from
// many goroutines; every result must equal the one computed alone.
func TestDeriveConcurrent(t *testing.T) {
	n, err := NewNormalizer([]byte(`{"properties":{"y":{"default":"d"},"w":{"default":{"v":1}}}}`), []string{"z.b"})
	if err != nil {
		t.Fatal(err)
	}
	d := &Deriver{Namespace: testNS, Normalizer: n}
	inputs := make([][]byte, 16)
	want := make([]Derived, len(inputs))
	for i := range inputs {
		inputs[i] = fmt.Appendf(nil, `{"z":[%d,{"b":"%s","a":%d.0}],"y":"%d"}`, i, strings.Repeat("é", i*50), i, i)
		var err error
		if want[i], err = d.Derive(Intent{Tenant: "t", Tool: fmt.Sprint(i)}, inputs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	mismatches := 0
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				i := (g + n) % len(inputs)
				got, err := d.Derive(Intent{Tenant: "t", Tool: fmt.Sprint(i)}, inputs[i])
				if err != nil || got.Key != want[i].Key || got.Fingerprint != want[i].Fingerprint || !bytes.Equal(got.Canonical, want[i].Canonical) {
					mu.Lock()
					mismatches++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if mismatches != 0 {
		t.Errorf("%d of %d concurrent derivations differed from the sequential result", mismatches, 16*200)
	}
}
