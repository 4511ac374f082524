package agentonce_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// An agent opens its journal file once, registers its tools and sends every
// tool call through the Harness: a re-issued call is answered from the
// journal, across restarts too.
func Example() {
	dir, _ := os.MkdirTemp("", "agentonce-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.journal")
	charges := 0
	charge := harness.Tool{Name: "charge_card", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			charges++
			return json.RawMessage(fmt.Sprintf(`{"charge":"ch_%d"}`, charges)), nil
		}}
	call := harness.ToolCall{Tenant: "acme", Session: "chat-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"customer":"8812","amount":4900}`)}

	for range 2 { // the agent restarts between the model's two identical calls
		h, err := agentonce.Open(context.Background(), path, nil)
		if err != nil {
			log.Fatal(err)
		}
		if err := h.Register(charge); err != nil {
			log.Fatal(err)
		}
		res := h.Call(context.Background(), call)
		fmt.Println(res.Status, res.Source, res.ForModel())
		if err := h.Close(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("charges:", charges)
	// Output:
	// succeeded executed {"charge":"ch_1"}
	// succeeded replayed {"charge":"ch_1"}
	// charges: 1
}
