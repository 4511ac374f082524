// Command agent is an agent loop on the Anthropic Messages API, offline:
// the real SDK client talks to a fake API on loopback whose scripted model
// asks for the same charge twice in one response, repeats it while
// re-planning, and asks again after the agent restarts mid-turn. The card
// is charged once per user turn and the receipt mailed once; it ends by
// counting the side effects the shop's API saw.
//
//	go run ./adapters/anthropic/examples/agent
//
// Exit status: 0 done; 1 error; 4 done, but a side effect was duplicated
// (a bug).
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	dir, err := os.MkdirTemp("", "anthropic-agent")
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	sum, err := run(context.Background(), dir, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if sum.duplicates != 0 {
		os.RemoveAll(dir)
		os.Exit(4)
	}
}
