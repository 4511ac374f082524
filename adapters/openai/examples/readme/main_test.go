package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/adapters/openai/internal/fakeapi"
)

// receiptSchema is the schema the model must be given for ReceiptInput.
const receiptSchema = `{"type":"object","properties":{
	"to":{"type":"string","description":"the customer's email address"},
	"order":{"type":"string","description":"the order number"}},
	"required":["to","order"],"additionalProperties":false}`

// The README's program against the fake API: the model is given the
// tool's description and derived schema, asks for the receipt, asks again
// after seeing the answer, and the receipt is mailed once; no warning.
func TestProgram(t *testing.T) {
	const input = `{"to":"ada@example.com","order":"1001"}`
	api := fakeapi.New(func(conv []fakeapi.Msg) fakeapi.Reply {
		switch len(conv) {
		case 1:
			return fakeapi.Reply{Calls: []fakeapi.Call{{ID: "call_1", Name: "send_receipt", Arguments: input}}}
		case 3: // a model that re-plans repeats the call
			return fakeapi.Reply{Calls: []fakeapi.Call{{ID: "call_2", Name: "send_receipt", Arguments: input}}}
		}
		return fakeapi.Reply{Text: "Receipt mailed."}
	})
	defer api.Close()
	t.Setenv("OPENAI_BASE_URL", api.URL+"/v1/")
	t.Setenv("OPENAI_API_KEY", "test-key")
	// A configured namespace, as a deployment has: the warning a new journal
	// with a random one gives is not what this test looks for.
	t.Setenv("AGENTONCE_NAMESPACE", "0b6d5e1c-3f5a-4e7b-9c2d-8a1f4e6b7c90")
	t.Chdir(t.TempDir())
	var warnings bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&warnings, nil)))

	out := stdout(t, main)

	if n := strings.Count(out, "mailing the receipt"); n != 1 {
		t.Errorf("mails = %d; want 1\n%s", n, out)
	}
	if !strings.HasSuffix(out, "Receipt mailed.\n") {
		t.Errorf("output = %q; want it to end with the model's answer", out)
	}
	reqs := api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d; want 3", len(reqs))
	}
	tools := reqs[0].Tools
	if len(tools) != 1 {
		t.Fatalf("tools = %d; want 1, send_receipt", len(tools))
	}
	if tl := tools[0]; tl.Name != "send_receipt" || tl.Description != "Mails the receipt of an order to the customer." || !sameJSON(tl.Parameters, receiptSchema) {
		t.Errorf("tool = {%s, %q, %s}; want send_receipt, its description and the schema of ReceiptInput %s", tl.Name, tl.Description, tl.Parameters, receiptSchema)
	}
	if first, second := fakeapi.Last(reqs[1].Conv), fakeapi.Last(reqs[2].Conv); first.Role != "tool" || first.Text != second.Text {
		t.Errorf("tool results = %+v, %+v; want the same answer twice", first, second)
	}
	if warnings.Len() != 0 {
		t.Errorf("warnings:\n%s", warnings.String())
	}
}

// stdout runs f and returns what it printed to os.Stdout.
func stdout(t *testing.T, f func()) string {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	saved := os.Stdout
	os.Stdout = file
	defer func() { os.Stdout = saved }()
	f()
	b, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSON(got json.RawMessage, want string) bool {
	var x, y any
	if json.Unmarshal(got, &x) != nil || json.Unmarshal([]byte(want), &y) != nil {
		return false
	}
	a, _ := json.Marshal(x)
	b, _ := json.Marshal(y)
	return string(a) == string(b)
}
