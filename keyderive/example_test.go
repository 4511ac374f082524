package keyderive_test

import (
	"errors"
	"fmt"

	"github.com/agentonce/agentonce/keyderive"
	"github.com/google/uuid"
)

func ExampleCanonicalize() {
	out, err := keyderive.Canonicalize([]byte(`{
		"order_id": 9007199254740993,
		"amount": 4900.0,
		"note": "caf\u00e9 \/ 1e3",
		"items": [1E3, 0.10, -0]
	}`), nil)
	fmt.Println(string(out), err)

	_, err = keyderive.Canonicalize([]byte(`{"amount":4900,"amount":4901}`), nil)
	var se *keyderive.SyntaxError
	fmt.Println(errors.Is(err, keyderive.ErrDuplicateKey), errors.As(err, &se) && se.Offset == 15)
	fmt.Println(err)
	// Output:
	// {"amount":4900,"items":[1000,0.1,0],"note":"café / 1e3","order_id":9007199254740993} <nil>
	// true true
	// keyderive: duplicate object member name "amount" at byte offset 15 (duplicate object key)
}

func ExampleAppendCanonical() {
	buf := make([]byte, 0, 64)
	buf, err := keyderive.AppendCanonical(buf, []byte(`[ true, {"b":null, "a":[]} ]`), nil)
	fmt.Println(string(buf), err)
	// Output: [true,{"a":[],"b":null}] <nil>
}

func ExampleDeriver_Derive() {
	// The namespace is a per-deployment secret (normally kept in the
	// journal); a fixed one keeps this example's key stable.
	d := &keyderive.Deriver{Namespace: uuid.MustParse("3d1c7a52-5f0e-4c43-9d8e-2a6b1f0c9e11")}
	intent := keyderive.Intent{Tenant: "acme", Session: "sess-42", Turn: "3", Tool: "create_charge"}

	first, _ := d.Derive(intent, []byte(`{"currency":"usd","amount":4900}`))
	retry, _ := d.Derive(intent, []byte(`{ "amount": 4900.0, "currency": "usd" }`))
	fmt.Println(first.Key)
	fmt.Println(string(first.Canonical))
	fmt.Println(first.Fingerprint.String()[:16])
	fmt.Println(retry.Key == first.Key)

	_, err := d.Derive(intent, []byte(`{"amount": 49.00.0}`))
	fmt.Println(err)
	// Output:
	// 4082e562-e5a9-5a01-8101-d3d780162214
	// {"amount":4900,"currency":"usd"}
	// b8254cdaf7442034
	// true
	// keyderive: unexpected character '.' in object, looking for ',' or '}' at byte offset 16 (invalid JSON)
}

func ExampleDeriver_DeriveExplicit() {
	d := &keyderive.Deriver{Namespace: uuid.MustParse("3d1c7a52-5f0e-4c43-9d8e-2a6b1f0c9e11")}
	intent := keyderive.Intent{Tenant: "acme", Tool: "create_charge"}
	a, _ := d.DeriveExplicit(intent, "order-1042/charge", []byte(`{"amount":4900}`))
	b, _ := d.DeriveExplicit(intent, "order-1042/charge", []byte(`{"amount":4901}`))
	// Same step key, same key; the fingerprint shows the payload changed.
	fmt.Println(a.Key == b.Key, a.Fingerprint == b.Fingerprint)
	fmt.Println(a.Key == keyderive.ExplicitKey(d.Namespace, "acme", "order-1042/charge"))
	// Output:
	// true false
	// true
}

func ExampleNewNormalizer() {
	// The tool's input schema, as the model sees it, and the free-text
	// property the model rewrites on every retry.
	schema := []byte(`{
		"type": "object",
		"properties": {
			"amount":   {"type": "integer"},
			"currency": {"type": "string"},
			"memo":     {"type": "string"},
			"reason":   {"type": "string"},
			"capture":  {"type": "boolean", "default": true}
		},
		"required": ["amount", "currency"]
	}`)
	n, err := keyderive.NewNormalizer(schema, []string{"reason"})
	if err != nil {
		panic(err)
	}
	d := &keyderive.Deriver{Namespace: uuid.MustParse("3d1c7a52-5f0e-4c43-9d8e-2a6b1f0c9e11"), Normalizer: n}
	intent := keyderive.Intent{Tenant: "acme", Session: "sess-42", Turn: "3", Tool: "create_charge"}

	a, _ := d.Derive(intent, []byte(`{"amount":4900,"currency":"usd"}`))
	b, _ := d.Derive(intent, []byte(`{"currency":"usd","amount":4900.0,"memo":null,"reason":"retrying"}`))
	fmt.Println(string(a.Canonical))
	fmt.Println(string(b.Canonical))
	fmt.Println(a.Key == b.Key)
	// Output:
	// {"amount":4900,"capture":true,"currency":"usd"}
	// {"amount":4900,"capture":true,"currency":"usd"}
	// true
}

func ExampleNormalizer_Normalize() {
	n, _ := keyderive.NewNormalizer(nil, []string{"reason", "meta.trace_id"})
	out, err := n.Normalize([]byte(`{"meta":{"trace_id":"t-9","user":"u1"},"q":"weather","reason":"user asked"}`))
	fmt.Println(string(out), err)
	// Output: {"meta":{"user":"u1"},"q":"weather"} <nil>
}

func ExampleKey() {
	ns := uuid.MustParse("3d1c7a52-5f0e-4c43-9d8e-2a6b1f0c9e11")
	canonical, _ := keyderive.Canonicalize([]byte(`{"q":"weather in Paris"}`), nil)
	turn3 := keyderive.Key(ns, keyderive.Intent{Tenant: "acme", Session: "s", Turn: "3", Tool: "search"}, canonical)
	turn4 := keyderive.Key(ns, keyderive.Intent{Tenant: "acme", Session: "s", Turn: "4", Tool: "search"}, canonical)
	fmt.Println(int(turn3.Version()), turn3 == turn4)
	// Output: 5 false
}
