package mcpcall_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/mcpcall"
)

// A host sends the same call twice with no scope in _meta: the Resolver
// places both in one window, so the harness runs the tool once, and the
// second answer tells the model so.
func ExampleResolver_Resolve() {
	h := harness.New(memory.New(nil), nil)
	defer h.Close()
	h.Register(harness.Tool{Name: "refund", Effect: journal.Unkeyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"refund":"re_1"}`), nil
		}})
	r := mcpcall.NewResolver(h, nil)
	alice := &mcpcall.Identity{Tenant: "acme", Principal: "alice"}
	for range 2 {
		call, err := r.Resolve(context.Background(), mcpcall.Request{
			Tool: "refund", Arguments: json.RawMessage(`{"order":"A-17"}`), Identity: alice})
		if err != nil {
			fmt.Println(err)
			return
		}
		a := mcpcall.AnswerOf(h.Call(context.Background(), call.ToolCall), call)
		fmt.Println(call.Session, a.Meta[mcpcall.MetaSource], a.IsError, len(a.Text) > len(`{"refund":"re_1"}`))
	}
	// Output:
	// "alice"/mcp-window executed false false
	// "alice"/mcp-window replayed false true
}

// HintsOf gives the annotations a served tool carries; EffectOf reads them
// back for a trusted server.
func ExampleHintsOf() {
	h := mcpcall.HintsOf(journal.Unkeyed)
	fmt.Println(*h.ReadOnly, *h.Destructive, *h.Idempotent)
	fmt.Println(mcpcall.EffectOf(mcpcall.HintsOf(journal.ReadOnly), false), mcpcall.EffectOf(mcpcall.Hints{}, true))
	// Output:
	// false true false
	// read-only keyed
}
